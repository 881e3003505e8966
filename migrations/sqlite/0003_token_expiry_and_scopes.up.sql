-- A token may expire, and may carry only some of its account's rights
-- (scopes: a comma-separated subset of check, publish, review, admin;
-- NULL is every right the account's role gives). Existing tokens keep
-- what they had: no expiry, every right.
ALTER TABLE api_tokens ADD COLUMN expires_at BIGINT;
ALTER TABLE api_tokens ADD COLUMN scopes TEXT;
