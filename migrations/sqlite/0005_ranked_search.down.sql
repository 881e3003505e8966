DROP TRIGGER version_search_insert;
DROP TABLE version_search;
