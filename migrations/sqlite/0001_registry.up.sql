-- The registry (SQLite). Mirrors migrations/postgres/0001_registry.up.sql:
-- the same tables, columns and meanings, so the store's queries run on both.
-- Timestamps are Unix milliseconds (BIGINT); JSON is TEXT (the store never
-- queries inside it).

-- One row: the ruleset revision, bumped in the transaction of every write
-- that changes what is served or listed. Write transactions update it first,
-- which also serialises them.
CREATE TABLE registry_state (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    revision BIGINT  NOT NULL
);
INSERT INTO registry_state (id, revision) VALUES (1, 0);

CREATE TABLE accounts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT    NOT NULL UNIQUE,
    role       TEXT    NOT NULL CHECK (role IN ('contributor', 'maintainer', 'admin')),
    created_at BIGINT  NOT NULL
);

-- Only the sha256 of a token's secret is kept; the secret is shown once.
CREATE TABLE api_tokens (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id    BIGINT  NOT NULL REFERENCES accounts (id),
    label         TEXT    NOT NULL,
    secret_sha256 TEXT    NOT NULL UNIQUE,
    created_at    BIGINT  NOT NULL,
    revoked_at    BIGINT,
    last_used_at  BIGINT
);
CREATE INDEX api_tokens_account ON api_tokens (account_id);

CREATE TABLE rules (
    id         TEXT   PRIMARY KEY,
    created_at BIGINT NOT NULL
);

CREATE TABLE rule_owners (
    rule_id    TEXT   NOT NULL REFERENCES rules (id),
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    added_at   BIGINT NOT NULL,
    PRIMARY KEY (rule_id, account_id)
);
CREATE INDEX rule_owners_account ON rule_owners (account_id);

-- Module bytes, once per content hash.
CREATE TABLE modules (
    sha256     TEXT   PRIMARY KEY,
    bytes      BLOB   NOT NULL,
    size       BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE versions (
    rule_id            TEXT    NOT NULL REFERENCES rules (id),
    version            TEXT    NOT NULL,
    sha256             TEXT    NOT NULL REFERENCES modules (sha256),
    state              TEXT    NOT NULL CHECK (state IN ('pending', 'approved', 'rejected', 'yanked')),
    -- 1 on the highest version (semver order) of its rule among the
    -- versions in the same state; kept by the store on every write.
    is_latest_in_state INTEGER NOT NULL DEFAULT 0 CHECK (is_latest_in_state IN (0, 1)),
    meta               TEXT    NOT NULL,
    tests              TEXT    NOT NULL,
    report             TEXT    NOT NULL,
    title              TEXT    NOT NULL,
    summary            TEXT    NOT NULL,
    severity           TEXT    NOT NULL CHECK (severity IN ('error', 'warning', 'info')),
    -- 0 error, 1 warning, 2 info: the listing order.
    severity_rank      INTEGER NOT NULL,
    -- Lowercased title, summary, error signatures and id, for word search.
    search_text        TEXT    NOT NULL,
    published_by       BIGINT  REFERENCES accounts (id),
    created_at         BIGINT  NOT NULL,
    reviewed_by        BIGINT  REFERENCES accounts (id),
    review_reason      TEXT,
    state_changed_at   BIGINT  NOT NULL,
    PRIMARY KEY (rule_id, version)
);
CREATE INDEX versions_listing ON versions (state, is_latest_in_state, severity_rank, rule_id);

-- The package / accelerator / arch / engine values of a version's
-- applies_to selectors (normalised as the engine does), for filters.
-- `container` is stored with an empty value.
CREATE TABLE version_selectors (
    rule_id TEXT NOT NULL,
    version TEXT NOT NULL,
    kind    TEXT NOT NULL CHECK (kind IN ('package', 'accelerator', 'arch', 'engine', 'container')),
    value   TEXT NOT NULL,
    PRIMARY KEY (rule_id, version, kind, value),
    FOREIGN KEY (rule_id, version) REFERENCES versions (rule_id, version)
);
CREATE INDEX version_selectors_lookup ON version_selectors (kind, value);

-- Published content never changes: only the review columns and the
-- derived is_latest_in_state may be updated, and nothing is deleted.
CREATE TRIGGER versions_immutable BEFORE UPDATE OF
    rule_id, version, sha256, meta, tests, report, title, summary, severity,
    severity_rank, search_text, published_by, created_at ON versions
BEGIN
    SELECT RAISE(ABORT, 'published versions are immutable');
END;
CREATE TRIGGER versions_no_delete BEFORE DELETE ON versions
BEGIN
    SELECT RAISE(ABORT, 'published versions are never deleted (yank instead)');
END;
CREATE TRIGGER modules_immutable BEFORE UPDATE ON modules
BEGIN
    SELECT RAISE(ABORT, 'module bytes are immutable');
END;

-- Every write, in the transaction of the write. actor_account_id is NULL
-- for the system (seeding, the admin CLI).
CREATE TABLE audit_log (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    at               BIGINT  NOT NULL,
    actor_account_id BIGINT  REFERENCES accounts (id),
    actor_token_id   BIGINT  REFERENCES api_tokens (id),
    action           TEXT    NOT NULL,
    rule_id          TEXT,
    version          TEXT,
    token_id         BIGINT,
    account_id       BIGINT,
    detail           TEXT    NOT NULL
);
