ALTER TABLE watch_state DROP COLUMN secrets_sealed_under;
