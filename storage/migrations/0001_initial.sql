-- paperbot schema, version 1: every journey in PRODUCT.md has its tables here.
-- Times are ISO-8601 UTC strings ("2026-11-30T09:00:00+00:00"); Discord ids are INTEGER snowflakes.

CREATE TABLE papers (
    id              INTEGER PRIMARY KEY,
    title           TEXT    NOT NULL,
    title_derived   INTEGER NOT NULL DEFAULT 0,   -- 1 while the title was derived from the abstract
    abstract        TEXT    NOT NULL DEFAULT '',
    authors         TEXT    NOT NULL DEFAULT '[]', -- JSON list of names
    venue           TEXT,
    year            INTEGER,
    status          TEXT,                           -- Oral / Spotlight / Poster / Rejected ...
    url             TEXT,                           -- landing page (OpenReview, arXiv abs, proceedings)
    pdf_url         TEXT,
    code_url        TEXT,
    arxiv_id        TEXT UNIQUE,                    -- without version
    openreview_id   TEXT UNIQUE,
    doi             TEXT UNIQUE,                    -- lower-cased
    content_key     TEXT UNIQUE,                    -- hash of the normalised abstract (dedupe)
    external_id     TEXT,                           -- the source record's own id
    source          TEXT,
    published       TEXT,                           -- YYYY-MM-DD when known
    added_at        TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL
);
CREATE INDEX papers_external_id ON papers(external_id);
CREATE INDEX papers_added_at ON papers(added_at);

CREATE TABLE users (
    id               INTEGER PRIMARY KEY,           -- Discord user id
    created_at       TEXT    NOT NULL,
    learning_paused  INTEGER NOT NULL DEFAULT 0,
    pending_notice   TEXT                            -- told at the user's next command (e.g. DMs closed)
);

CREATE TABLE user_topics (
    user_id   INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    topic     TEXT    NOT NULL,
    added_at  TEXT    NOT NULL,
    PRIMARY KEY (user_id, topic)
);

-- One row per (user, paper, signal). like and dislike exclude each other; save is independent.
CREATE TABLE feedback (
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    paper_id    INTEGER NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
    signal      TEXT    NOT NULL CHECK (signal IN ('like', 'dislike', 'save')),
    guild_id    INTEGER,                             -- where it was given (server popularity)
    created_at  TEXT    NOT NULL,
    PRIMARY KEY (user_id, paper_id, signal)
);
CREATE INDEX feedback_paper ON feedback(paper_id);
CREATE INDEX feedback_guild ON feedback(guild_id, signal);

-- Papers shown to a user as recommendations (so they are not recommended again).
CREATE TABLE recommendations_shown (
    user_id   INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    paper_id  INTEGER NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
    shown_at  TEXT    NOT NULL,
    PRIMARY KEY (user_id, paper_id)
);

-- A digest subscription: a user's DM digest (kind 'user') or a channel feed (kind 'channel').
CREATE TABLE subscriptions (
    id             INTEGER PRIMARY KEY,
    kind           TEXT    NOT NULL CHECK (kind IN ('user', 'channel')),
    user_id        INTEGER REFERENCES users(id) ON DELETE CASCADE,  -- owner of a user digest
    guild_id       INTEGER,
    channel_id     INTEGER,                                          -- target of a channel feed
    topics         TEXT    NOT NULL DEFAULT '[]',                    -- JSON list
    time_local     TEXT    NOT NULL DEFAULT '09:00',                 -- HH:MM
    timezone       TEXT    NOT NULL DEFAULT 'UTC',                   -- IANA name
    frequency      TEXT    NOT NULL DEFAULT 'daily' CHECK (frequency IN ('daily', 'weekdays', 'weekly')),
    weekday        INTEGER NOT NULL DEFAULT 0,                       -- 0=Monday, for weekly
    count          INTEGER NOT NULL DEFAULT 5 CHECK (count BETWEEN 1 AND 10),
    active         INTEGER NOT NULL DEFAULT 1,
    paused_reason  TEXT,
    created_by     INTEGER,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL,
    CHECK ((kind = 'user' AND user_id IS NOT NULL) OR (kind = 'channel' AND channel_id IS NOT NULL))
);
CREATE UNIQUE INDEX subscriptions_one_per_user ON subscriptions(user_id) WHERE kind = 'user';
CREATE UNIQUE INDEX subscriptions_one_per_channel ON subscriptions(channel_id) WHERE kind = 'channel';

-- One digest period of one subscription, claimed before anything is sent (exactly once).
CREATE TABLE digest_runs (
    id               INTEGER PRIMARY KEY,
    subscription_id  INTEGER NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,
    period_key       TEXT    NOT NULL,              -- local date of the period, YYYY-MM-DD
    status           TEXT    NOT NULL DEFAULT 'claimed'
                     CHECK (status IN ('claimed', 'sent', 'empty', 'failed', 'skipped')),
    detail           TEXT,
    claimed_at       TEXT    NOT NULL,
    finished_at      TEXT,
    UNIQUE (subscription_id, period_key)
);

-- The papers planned for a run; sent_at is set as each message goes out (resume after a crash).
CREATE TABLE digest_items (
    run_id      INTEGER NOT NULL REFERENCES digest_runs(id) ON DELETE CASCADE,
    paper_id    INTEGER NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    reason      TEXT    NOT NULL DEFAULT '',
    message_id  INTEGER,
    sent_at     TEXT,
    PRIMARY KEY (run_id, paper_id)
);

-- Every paper ever sent to a recipient by a digest: a paper is never sent twice to the same person
-- (or channel).
CREATE TABLE digest_sent (
    user_id     INTEGER REFERENCES users(id) ON DELETE CASCADE,
    channel_id  INTEGER,
    paper_id    INTEGER NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
    sent_at     TEXT    NOT NULL,
    CHECK ((user_id IS NULL) <> (channel_id IS NULL))
);
CREATE UNIQUE INDEX digest_sent_user ON digest_sent(user_id, paper_id) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX digest_sent_channel ON digest_sent(channel_id, paper_id) WHERE channel_id IS NOT NULL;

-- Single-paper messages the bot posted, so a reaction on any of them (any age) names one paper.
CREATE TABLE posted_messages (
    message_id    INTEGER PRIMARY KEY,
    channel_id    INTEGER NOT NULL,
    guild_id      INTEGER,
    paper_id      INTEGER NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
    recipient_id  INTEGER,                           -- the user a DM was for
    kind          TEXT    NOT NULL DEFAULT 'paper',  -- paper / digest / feed
    posted_at     TEXT    NOT NULL
);
CREATE INDEX posted_messages_recipient ON posted_messages(recipient_id);

-- Small operational state: command-definition hash, last arXiv fetch, fetch cursors.
CREATE TABLE app_state (
    key         TEXT PRIMARY KEY,
    value       TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

-- A search or similar-papers listing, so its paging buttons work after a restart
-- (a button's custom_id holds only this id and the page).
CREATE TABLE searches (
    id          INTEGER PRIMARY KEY,
    kind        TEXT    NOT NULL CHECK (kind IN ('search', 'similar')),
    query       TEXT    NOT NULL DEFAULT '',
    paper_id    INTEGER REFERENCES papers(id) ON DELETE CASCADE,
    author      TEXT,
    venue       TEXT,
    year        INTEGER,
    page_size   INTEGER NOT NULL,
    user_id     INTEGER,
    created_at  TEXT    NOT NULL
);
