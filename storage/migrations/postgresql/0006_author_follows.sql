-- Authors a person follows (as ../0006_author_follows.sql).
CREATE TABLE author_follows (
    user_id         BIGINT  NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name            TEXT    NOT NULL,
    name_key        TEXT    NOT NULL,
    group_paper_id  BIGINT  REFERENCES papers(id) ON DELETE CASCADE,
    detail          TEXT,
    followed_at     TEXT    NOT NULL,
    rowid           BIGINT  GENERATED ALWAYS AS IDENTITY
);
CREATE UNIQUE INDEX author_follows_once ON author_follows(user_id, name_key, COALESCE(group_paper_id, 0));
