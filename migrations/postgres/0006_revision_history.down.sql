DROP TABLE served_spans;
DROP TABLE ruleset_revisions;
