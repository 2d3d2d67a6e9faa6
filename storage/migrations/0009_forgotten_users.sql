-- Who asked to be forgotten, and when (`/paper forget-me`): written in the deletion's transaction, and
-- checked by every write about a person that began before it reached the store (a reaction waiting in
-- a process's outbox, a digest in flight), so that nothing accepted before the forgetting brings the
-- person back. A write that began after it is stored as usual: the person may come back. Kept for
-- 90 days (`storage.repositories.users.FORGOTTEN_KEEP`).
CREATE TABLE forgotten_users (
    user_id       INTEGER PRIMARY KEY,
    forgotten_at  TEXT    NOT NULL            -- ISO-8601 UTC, to the microsecond
);
CREATE INDEX forgotten_users_at ON forgotten_users(forgotten_at);
