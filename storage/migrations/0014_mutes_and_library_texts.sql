-- Muted topics: a phrase whose papers never reach a person's digest, `/paper recommend` or the
-- personal order of their searches (`/paper interests mute`). ``phrase`` is the words as typed,
-- ``terms`` their index terms (the search engine's tokenizer: stems, stop words left out) joined by
-- spaces: two phrases with the same terms are one mute.
CREATE TABLE mutes (
    id         INTEGER PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    phrase     TEXT    NOT NULL,
    terms      TEXT    NOT NULL,
    added_at   TEXT    NOT NULL,
    UNIQUE (user_id, terms)
);

-- A channel feed's muted topics sit beside its topics (`/paperadmin feed mute`), read with the feed:
-- a JSON list of the phrases as typed.
ALTER TABLE subscriptions ADD COLUMN mutes TEXT NOT NULL DEFAULT '[]';

-- The papers of a person's library (`/paper interests add file:`) that the store does not have: their
-- own title and abstract teach that person's picks, and nobody else's. They are no papers of the store
-- (never searched, shown or sent to anyone); forget-me deletes them. ``key`` is the title normalised
-- (case, accents, punctuation and spacing ignored): one row per paper per person.
CREATE TABLE library_texts (
    id        INTEGER PRIMARY KEY,
    user_id   INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    key       TEXT    NOT NULL,
    title     TEXT    NOT NULL,
    abstract  TEXT,
    added_at  TEXT    NOT NULL,
    UNIQUE (user_id, key)
);
