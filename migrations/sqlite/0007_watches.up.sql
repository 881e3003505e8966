-- Watches: an account's stored manifests (a fleet, each with a label),
-- re-evaluated when the served ruleset changes, and notified of new and
-- gone findings by a signed webhook. `needs_full`: its manifests were
-- first evaluated against an older set than the evaluator had already
-- passed (a write racing a transition), so the next pass evaluates it
-- whole. `failing`: a delivery gave up after its retry window.
CREATE TABLE watches (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id         BIGINT NOT NULL REFERENCES accounts (id),
    name               TEXT NOT NULL,
    webhook_url        TEXT   NOT NULL,
    secret             TEXT   NOT NULL,
    min_severity       TEXT   NOT NULL CHECK (min_severity IN ('info', 'warning', 'error')),
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    evaluated_revision BIGINT NOT NULL,
    evaluated_at       BIGINT NOT NULL,
    needs_full         BIGINT NOT NULL DEFAULT 0,
    failing            BIGINT NOT NULL DEFAULT 0,
    UNIQUE (account_id, name)
);

-- A watch's manifests. `seq` orders writes (taken from `watch_state.seq`
-- under its row lock), so a replica's index catches up by reading the
-- rows above the last seq it saw. Replacing a watch's manifests deletes
-- and inserts rows: a row's manifest never changes.
CREATE TABLE watch_manifests (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    watch_id BIGINT NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    seq      BIGINT NOT NULL,
    label    TEXT NOT NULL,
    manifest TEXT   NOT NULL,
    UNIQUE (watch_id, label)
);
CREATE INDEX watch_manifests_seq ON watch_manifests (seq);

-- The findings of each stored manifest at its last evaluation, one row a
-- rule: what the next evaluation's answer is compared with.
CREATE TABLE watch_findings (
    manifest_id  BIGINT NOT NULL REFERENCES watch_manifests (id) ON DELETE CASCADE,
    rule_id      TEXT NOT NULL,
    rule_version TEXT   NOT NULL,
    severity     TEXT   NOT NULL,
    title        TEXT   NOT NULL,
    PRIMARY KEY (manifest_id, rule_id)
);
CREATE INDEX watch_findings_rule ON watch_findings (rule_id);

-- The evaluator's cursor: the ruleset revision every watch has been
-- evaluated against, and what that revision served (rule id -> sha256,
-- JSON), so the next transition evaluates only the rules that changed.
-- A replica claims a transition with the lease; the results, the outbox
-- rows and the cursor move in one transaction.
CREATE TABLE watch_state (
    id          BIGINT PRIMARY KEY CHECK (id = 1),
    revision    BIGINT NOT NULL,
    served      TEXT,
    seq         BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT
);
INSERT INTO watch_state (id, revision, served, seq) VALUES (1, 0, NULL, 0);

-- The outbox: one row an event, written in the transaction that decided
-- it. `event_id` is the idempotency id receivers see; a delivery is
-- claimed with a lease (`lease_until`), retried at `next_attempt_at`.
CREATE TABLE watch_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    watch_id        BIGINT NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    event_id        TEXT NOT NULL UNIQUE,
    kind            TEXT   NOT NULL CHECK (kind IN ('findings', 'ping')),
    body            TEXT   NOT NULL,
    created_at      BIGINT NOT NULL,
    state           TEXT   NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_until     BIGINT,
    last_status     BIGINT,
    last_error      TEXT,
    delivered_at    BIGINT
);
CREATE INDEX watch_deliveries_due ON watch_deliveries (state, next_attempt_at);
CREATE INDEX watch_deliveries_watch ON watch_deliveries (watch_id, id);

-- Every try of a delivery: the status or the error.
CREATE TABLE watch_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id BIGINT NOT NULL REFERENCES watch_deliveries (id) ON DELETE CASCADE,
    at          BIGINT NOT NULL,
    status      BIGINT,
    error       TEXT,
    elapsed_ms  BIGINT NOT NULL
);
CREATE INDEX watch_attempts_delivery ON watch_attempts (delivery_id);
