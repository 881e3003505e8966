DROP TABLE review_sessions;
