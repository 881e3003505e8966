CREATE TABLE version_selectors_0001 (
    rule_id TEXT NOT NULL,
    version TEXT NOT NULL,
    kind    TEXT NOT NULL CHECK (kind IN ('package', 'accelerator', 'arch', 'engine', 'container')),
    value   TEXT NOT NULL,
    PRIMARY KEY (rule_id, version, kind, value),
    FOREIGN KEY (rule_id, version) REFERENCES versions (rule_id, version)
);
INSERT INTO version_selectors_0001 (rule_id, version, kind, value)
    SELECT rule_id, version, kind, value FROM version_selectors WHERE kind <> 'capability';
DROP TABLE version_selectors;
ALTER TABLE version_selectors_0001 RENAME TO version_selectors;
CREATE INDEX version_selectors_lookup ON version_selectors (kind, value);
