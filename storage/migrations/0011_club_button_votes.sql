-- A reading group's poll as buttons where the bot may not post Discord polls (no Send Polls): the
-- week says so (`buttons` 1) and each member's one vote is kept here until the winner is announced.
ALTER TABLE club_weeks ADD COLUMN buttons INTEGER NOT NULL DEFAULT 0;
CREATE TABLE club_votes (
    channel_id   INTEGER NOT NULL,
    announce_at  TEXT    NOT NULL,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    answer       INTEGER NOT NULL,
    voted_at     TEXT    NOT NULL,
    PRIMARY KEY (channel_id, announce_at, user_id),
    FOREIGN KEY (channel_id, announce_at) REFERENCES club_weeks(channel_id, announce_at) ON DELETE CASCADE
);
