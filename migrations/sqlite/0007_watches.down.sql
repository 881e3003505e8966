DROP TABLE watch_attempts;
DROP TABLE watch_deliveries;
DROP TABLE watch_state;
DROP TABLE watch_findings;
DROP TABLE watch_manifests;
DROP TABLE watches;
