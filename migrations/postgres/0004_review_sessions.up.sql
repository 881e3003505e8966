-- The review pages' sign-in: a session per sign-in, named by a random id
-- that only the browser's cookie holds (only its sha256 is kept here),
-- tied to the token that signed in. A session ends after 12 hours idle or
-- 7 days in all, at sign-out, and when its token is revoked or expires.
CREATE TABLE review_sessions (
    id_sha256    TEXT   PRIMARY KEY,
    token_id     BIGINT NOT NULL REFERENCES api_tokens (id),
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);
CREATE INDEX review_sessions_token ON review_sessions (token_id);
