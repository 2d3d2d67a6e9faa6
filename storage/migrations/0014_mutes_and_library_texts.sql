-- Muted topics: a phrase whose papers never reach a person's digest, `/paper recommend` or the
-- personal order of their searches (`/paper interests mute`), or a channel feed's posts
-- (`/paperadmin feed mute`). Exactly one owner: a person (``user_id``) or a feed (``subscription_id``,
-- gone with the feed). ``phrase`` is the words as typed, ``terms`` their index terms (the search
-- engine's tokenizer: stems, stop words left out) joined by spaces: two phrases with the same terms are
-- one mute.
CREATE TABLE mutes (
    id               INTEGER PRIMARY KEY,
    user_id          INTEGER REFERENCES users(id) ON DELETE CASCADE,
    subscription_id  INTEGER REFERENCES subscriptions(id) ON DELETE CASCADE,
    phrase           TEXT    NOT NULL,
    terms            TEXT    NOT NULL,
    added_at         TEXT    NOT NULL,
    CHECK ((user_id IS NULL AND subscription_id IS NOT NULL) OR (user_id IS NOT NULL AND subscription_id IS NULL))
);
CREATE UNIQUE INDEX mutes_person_once ON mutes(user_id, terms) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX mutes_feed_once ON mutes(subscription_id, terms) WHERE subscription_id IS NOT NULL;

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
