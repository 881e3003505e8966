DROP TRIGGER version_search_insert ON versions;
DROP FUNCTION pitfall_index_version();
DROP TABLE version_search;
