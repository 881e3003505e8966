-- The ruleset's history (SQLite). Mirrors migrations/postgres/0006: every
-- revision with the time it was committed, and which version of each rule
-- each revision served, so a check can be answered as of any revision.
-- Both are written by the store in the transaction that bumps the revision.

CREATE TABLE ruleset_revisions (
    revision    BIGINT PRIMARY KEY,
    recorded_at BIGINT NOT NULL
);

-- A version served from `from_revision` up to, not including,
-- `to_revision` (NULL: served now). At most one open span per rule.
-- `ended_state` is the version's state when it stopped being served:
-- 'yanked', or 'approved' when a higher version took its place.
CREATE TABLE served_spans (
    rule_id       TEXT   NOT NULL,
    version       TEXT   NOT NULL,
    sha256        TEXT   NOT NULL REFERENCES modules (sha256),
    from_revision BIGINT NOT NULL,
    to_revision   BIGINT,
    ended_state   TEXT CHECK (ended_state IN ('pending', 'approved', 'rejected', 'yanked')),
    PRIMARY KEY (rule_id, from_revision),
    FOREIGN KEY (rule_id, version) REFERENCES versions (rule_id, version),
    CHECK (to_revision IS NULL OR to_revision > from_revision)
);
CREATE INDEX served_spans_version ON served_spans (rule_id, version, to_revision);
CREATE INDEX served_spans_from ON served_spans (from_revision);
CREATE INDEX served_spans_to ON served_spans (to_revision);

-- History starts at the revision the database is at: what it serves now,
-- committed when its last rule write was.
INSERT INTO ruleset_revisions (revision, recorded_at)
SELECT s.revision,
       COALESCE((SELECT MAX(state_changed_at) FROM versions),
                CAST(strftime('%s', 'now') AS INTEGER) * 1000)
FROM registry_state s WHERE s.id = 1;

INSERT INTO served_spans (rule_id, version, sha256, from_revision)
SELECT v.rule_id, v.version, v.sha256, (SELECT revision FROM registry_state WHERE id = 1)
FROM versions v WHERE v.state = 'approved' AND v.is_latest_in_state = 1;
