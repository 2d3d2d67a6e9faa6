-- A change sequence the search index follows instead of wall-clock stamps.
--
-- Every insert or update of a paper takes the next number of paper_changes.seq and stores it in the
-- row's change_seq, in the same transaction (the triggers below), so no writer can forget it. Taking
-- the number writes the one paper_changes row, so transactions that change papers commit in the
-- order of their numbers: a reader that has seen seq N and then reads the rows with change_seq > N
-- together with the new seq (one read transaction) has everything, whatever commits meanwhile and
-- however long another writer's transaction ran. (PostgreSQL can do the same: the row lock on the
-- counter row serialises paper writers until they commit, and the same triggers stamp the rows.)
--
-- store_id is random per database: a search snapshot records the store, the seq and the number of
-- papers it holds, so a snapshot made for another database is never taken for this one's.

CREATE TABLE paper_changes (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    seq       INTEGER NOT NULL,
    store_id  TEXT    NOT NULL
);
INSERT INTO paper_changes (id, seq, store_id)
SELECT 1, COALESCE(MAX(id), 0), lower(hex(randomblob(16))) FROM papers;

ALTER TABLE papers ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
UPDATE papers SET change_seq = id;  -- papers stored before: each its own number, all <= seq
CREATE INDEX papers_change_seq ON papers(change_seq);

CREATE TRIGGER papers_inserted_take_a_change_seq AFTER INSERT ON papers
BEGIN
    UPDATE paper_changes SET seq = seq + 1 WHERE id = 1;
    UPDATE papers SET change_seq = (SELECT seq FROM paper_changes WHERE id = 1) WHERE id = NEW.id;
END;

CREATE TRIGGER papers_updated_take_a_change_seq AFTER UPDATE ON papers
WHEN NEW.change_seq = OLD.change_seq
BEGIN
    UPDATE paper_changes SET seq = seq + 1 WHERE id = 1;
    UPDATE papers SET change_seq = (SELECT seq FROM paper_changes WHERE id = 1) WHERE id = NEW.id;
END;
