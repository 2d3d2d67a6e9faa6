-- Papers from more sources than files and arXiv (`bot.services.papers.sources`): RSS/Atom feeds,
-- bioRxiv and medRxiv, OpenReview venues.
--
-- source_fetches: one row per configured source ("rss:https://…", "biorxiv:neuroscience",
-- "openreview:ICLR.cc/2025/Conference", "arxiv:cs.LG"): where an interrupted fetch resumes (cursor,
-- written in the same transaction as the papers of its page), the day the last finished fetch reached
-- (the next one starts there), and what `/paperadmin stats` shows of it.
CREATE TABLE source_fetches (
    source          TEXT    PRIMARY KEY,
    cursor          TEXT,                          -- JSON while a fetch is unfinished, else NULL
    fetched_until   TEXT,                          -- YYYY-MM-DD the last finished fetch covered
    last_fetch_at   TEXT,                          -- ISO-8601 UTC, the last finished fetch
    last_records    INTEGER NOT NULL DEFAULT 0,    -- records the last finished fetch read
    last_added      INTEGER NOT NULL DEFAULT 0,    -- papers it added
    total_records   INTEGER NOT NULL DEFAULT 0,    -- records read by every fetch of this source
    total_added     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,                          -- why the last attempt failed (NULL once one succeeds)
    last_error_at   TEXT
);

-- More keys of one paper than its columns hold: another DOI (a preprint's and its journal version's),
-- the content key of a newer version's abstract, and the normalised title + first author
-- (`storage.repositories.paper_keys.title_author_key`). A record matching any of them is that paper.
CREATE TABLE paper_aliases (
    kind      TEXT    NOT NULL CHECK (kind IN ('doi', 'content_key', 'title_author')),
    value     TEXT    NOT NULL,
    paper_id  BIGINT  NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
    PRIMARY KEY (kind, value)
);
CREATE INDEX paper_aliases_paper ON paper_aliases(paper_id);

-- The version a source last gave of a paper (arXiv v2, a bioRxiv version): a newer one updates it.
ALTER TABLE papers ADD COLUMN version INTEGER;
