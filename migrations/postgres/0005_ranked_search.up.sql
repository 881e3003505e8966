-- Ranked free-text search: a tsvector of each version's search text (id,
-- title, summary, message, error signatures), ranked with ts_rank. The
-- 'simple' configuration neither stems nor drops words, as SQLite's FTS5
-- (unicode61) does not, and the text is cut into alphanumeric runs first
-- (PostgreSQL's parser would keep a path or a URL whole, FTS5 does not):
-- both backends index the same words. Versions are
-- immutable and never deleted, so an insert trigger keeps it.
CREATE TABLE version_search (
    rule_id  TEXT COLLATE "C" NOT NULL,
    version  TEXT COLLATE "C" NOT NULL,
    document TSVECTOR NOT NULL,
    PRIMARY KEY (rule_id, version),
    FOREIGN KEY (rule_id, version) REFERENCES versions (rule_id, version)
);
CREATE INDEX version_search_document ON version_search USING GIN (document);
INSERT INTO version_search (rule_id, version, document)
    SELECT rule_id, version,
           to_tsvector('simple', regexp_replace(
               search_text || ' ' || lower(coalesce(meta::json ->> 'message', '')),
               '[^[:alnum:]]+', ' ', 'g'))
    FROM versions;
CREATE FUNCTION pitfall_index_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO version_search (rule_id, version, document)
        VALUES (NEW.rule_id, NEW.version,
                to_tsvector('simple', regexp_replace(NEW.search_text, '[^[:alnum:]]+', ' ', 'g')));
    RETURN NEW;
END;
$$;
CREATE TRIGGER version_search_insert AFTER INSERT ON versions
    FOR EACH ROW EXECUTE FUNCTION pitfall_index_version();
