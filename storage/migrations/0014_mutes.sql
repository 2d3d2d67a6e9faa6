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
