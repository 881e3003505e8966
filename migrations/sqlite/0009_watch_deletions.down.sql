ALTER TABLE watch_state DROP COLUMN deletions_pruned_to;
DROP TABLE watch_deletions;
