-- The start-up's record that every watch secret is sealed under one key:
-- the id of the watch secret key (`SealingKey::id`,
-- `server/src/secret_box.rs`) every row of `watches` is sealed under, or
-- NULL while that is unknown (a database from before this column, or one
-- a process that has not read a key rotation wrote to since: that write
-- clears it). A start with a key of that id skips reading `watches`; one
-- that finds NULL or another id seals under its key what is in the
-- clear or under the previous key, then records its key's id, under the
-- `watch_state` row lock and only if no such row is left.
ALTER TABLE watch_state ADD COLUMN secrets_sealed_under TEXT;
