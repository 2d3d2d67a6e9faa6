-- Authors a person follows: a followed author's new papers come first in that person's digest.
-- `name` is the name as shown; `name_key` the same name folded (case, accents and spacing ignored),
-- which is what matches the names on papers. Where the papers under one name fall into groups with no
-- co-author in common (perhaps different people), `group_paper_id` names the group the person picked:
-- the one holding that paper; NULL follows every paper under the name. `detail` is what told the
-- group apart when it was picked (co-authors, venues, years), to show it again.
CREATE TABLE author_follows (
    user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name            TEXT    NOT NULL,
    name_key        TEXT    NOT NULL,
    group_paper_id  INTEGER REFERENCES papers(id) ON DELETE CASCADE,
    detail          TEXT,
    followed_at     TEXT    NOT NULL
);
-- One follow of a name (or of one group under it) per person.
CREATE UNIQUE INDEX author_follows_once ON author_follows(user_id, name_key, COALESCE(group_paper_id, 0));
