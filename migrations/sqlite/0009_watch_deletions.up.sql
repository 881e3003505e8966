-- Watches deleted, for the fact index each replica keeps of the stored
-- manifests (`server/src/watch/index.rs`): a replica catching up reads
-- the rows written and the watches deleted above the last `watch_state`
-- seq it read, so a deleted watch's manifests leave every index at its
-- next poll, not when a changed rule first admits them. `seq` is the
-- deleting write's (taken under the `watch_state` row lock, so unique).
-- A deletion is kept for a day (`deleted_at`); pruning one records its
-- seq in `watch_state.deletions_pruned_to`, and an index that had read
-- less than that (a replica that did not catch up for a day) is built
-- afresh.
CREATE TABLE watch_deletions (
    seq        BIGINT PRIMARY KEY,
    watch_id   BIGINT NOT NULL,
    deleted_at BIGINT NOT NULL
);
ALTER TABLE watch_state ADD COLUMN deletions_pruned_to BIGINT NOT NULL DEFAULT 0;
