-- Who asked to be forgotten, and when (as ../0009_forgotten_users.sql).
CREATE TABLE forgotten_users (
    user_id       BIGINT  PRIMARY KEY,
    forgotten_at  TEXT    NOT NULL
);
CREATE INDEX forgotten_users_at ON forgotten_users(forgotten_at);
