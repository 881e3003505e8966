-- Ranked free-text search: an FTS5 index over each version's search text
-- (id, title, summary, message, error signatures), ranked with bm25.
-- Versions are immutable and never deleted, so an insert trigger keeps it.
CREATE VIRTUAL TABLE version_search USING fts5(
    rule_id UNINDEXED,
    version UNINDEXED,
    document,
    tokenize = 'unicode61'
);
INSERT INTO version_search (rule_id, version, document)
    SELECT rule_id, version, search_text || ' ' || lower(coalesce(json_extract(meta, '$.message'), ''))
    FROM versions;
CREATE TRIGGER version_search_insert AFTER INSERT ON versions BEGIN
    INSERT INTO version_search (rule_id, version, document)
        VALUES (new.rule_id, new.version, new.search_text);
END;
