-- A person's interests, each served and learned on its own (`bot.services.recommend.interests`): a
-- typed topic (`/paper interests add topic:` or `/paper subscribe topics:`), a paper they named
-- (`/paper interests add paper:`), or a group of liked papers far from every other interest (started
-- by such a 👍). ``key`` tells one interest of a person from another: 'topic:' and the text as typed,
-- 'paper:' and the paper's id. A removed interest stays as a row with ``removed_at`` (so a 👍 on a
-- paper it brought does not start it again) until the person is forgotten.
CREATE TABLE interests (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: shown papers keep the id that brought them
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    kind        TEXT    NOT NULL CHECK (kind IN ('topic', 'paper', 'liked')),
    key         TEXT    NOT NULL,
    topic       TEXT,                                -- the words typed (kind 'topic')
    paper_id    INTEGER REFERENCES papers(id) ON DELETE CASCADE,  -- the paper named or first liked
    origin      TEXT    NOT NULL DEFAULT 'interests' CHECK (origin IN ('interests', 'subscribe', 'reaction')),
    paused_at   TEXT,                                -- ISO-8601 UTC while paused
    removed_at  TEXT,
    added_at    TEXT    NOT NULL,
    UNIQUE (user_id, key)
);
CREATE INDEX interests_paper ON interests(paper_id);

INSERT INTO interests (user_id, kind, key, topic, added_at)
SELECT user_id, 'topic', 'topic:' || topic, topic, added_at FROM user_topics
ORDER BY added_at, rowid;
DROP TABLE user_topics;

-- The topics of a person's digest are their interests too.
INSERT INTO interests (user_id, kind, key, topic, origin, added_at)
SELECT s.user_id, 'topic', 'topic:' || j.value, j.value, 'subscribe', s.created_at
FROM subscriptions AS s, json_each(s.topics) AS j
WHERE s.kind = 'user' AND s.user_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM interests AS i WHERE i.user_id = s.user_id AND lower(i.topic) = lower(j.value)
)
ON CONFLICT DO NOTHING;

-- The interest that brought each paper shown or sent to a person (NULL: none did, or a channel feed's).
ALTER TABLE recommendations_shown ADD COLUMN interest_id INTEGER;
ALTER TABLE digest_sent ADD COLUMN interest_id INTEGER;
ALTER TABLE digest_items ADD COLUMN interest_id INTEGER;
