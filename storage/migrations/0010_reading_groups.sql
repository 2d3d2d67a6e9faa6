-- A channel's reading group: each week a poll of candidate papers, the winner announced at the
-- channel's day and time (`weekday` 0 = Monday, `time` HH:MM in `timezone`), a thread for it and a
-- reminder the day before the meeting. `active` 0: turned off (its past weeks stay, for the history).
CREATE TABLE clubs (
    channel_id  INTEGER PRIMARY KEY,
    guild_id    INTEGER NOT NULL,
    weekday     INTEGER NOT NULL,
    time        TEXT    NOT NULL,
    timezone    TEXT    NOT NULL,
    topics      TEXT    NOT NULL DEFAULT '',
    created_by  INTEGER,
    active      INTEGER NOT NULL DEFAULT 1,
    updated_at  TEXT    NOT NULL
);
-- One week of a club, keyed by its announcement time (ISO-8601 UTC). `state` moves forward only:
-- poll_sending → polling → announce_sending → announced → threaded → open → reminded; each step is
-- stored before the message it sends (whose nonce derives from the week) and after it.
CREATE TABLE club_weeks (
    channel_id           INTEGER NOT NULL REFERENCES clubs(channel_id) ON DELETE CASCADE,
    announce_at          TEXT    NOT NULL,
    state                TEXT    NOT NULL,
    candidates           TEXT    NOT NULL,
    poll_message_id      INTEGER,
    votes                TEXT,
    winner_paper_id      INTEGER REFERENCES papers(id) ON DELETE SET NULL,
    announce_message_id  INTEGER,
    thread_id            INTEGER,
    paper_message_id     INTEGER,
    updated_at           TEXT    NOT NULL,
    PRIMARY KEY (channel_id, announce_at)
);
-- Papers members put forward for a club's next poll; `week` is the announcement time of the poll
-- that took it (NULL: waiting).
CREATE TABLE club_proposals (
    channel_id   INTEGER NOT NULL REFERENCES clubs(channel_id) ON DELETE CASCADE,
    paper_id     INTEGER NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    proposed_at  TEXT    NOT NULL,
    week         TEXT,
    PRIMARY KEY (channel_id, paper_id)
);
