-- The start-up's record that no watch secret is stored in the clear: the
-- id of the watch secret key (`SealingKey::id`, `server/src/secret_box.rs`)
-- of the start that found none left, or NULL while that is unknown (a
-- database from before this column). A start with a key of that id skips
-- reading `watches`; one that finds NULL or another id seals what is in
-- the clear, then records its key's id, under the `watch_state` row lock
-- and only if no such row is left. Every write stores a secret sealed, so
-- the record stays true.
ALTER TABLE watch_state ADD COLUMN secrets_sealed_under TEXT;
