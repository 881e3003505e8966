-- Capability selectors (`capability:>=8.0,<9.0`) came after 0001: the
-- selectors table takes them too, so it holds every kind of applies_to
-- selector. The value is the specifier as the selector prints it.
-- SQLite cannot change a CHECK constraint: the table is rebuilt.
CREATE TABLE version_selectors_0002 (
    rule_id TEXT NOT NULL,
    version TEXT NOT NULL,
    kind    TEXT NOT NULL CHECK (kind IN ('package', 'accelerator', 'arch', 'engine', 'container', 'capability')),
    value   TEXT NOT NULL,
    PRIMARY KEY (rule_id, version, kind, value),
    FOREIGN KEY (rule_id, version) REFERENCES versions (rule_id, version)
);
INSERT INTO version_selectors_0002 (rule_id, version, kind, value)
    SELECT rule_id, version, kind, value FROM version_selectors;
DROP TABLE version_selectors;
ALTER TABLE version_selectors_0002 RENAME TO version_selectors;
CREATE INDEX version_selectors_lookup ON version_selectors (kind, value);
