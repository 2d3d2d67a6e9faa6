-- The change sequence the search index follows (as ../0003_paper_change_sequence.sql, which explains
-- it). Here one trigger function stamps the row before it is written: taking the next number updates
-- the one paper_changes row, whose row lock then serialises paper writers until they commit, so
-- transactions that change papers commit in the order of their numbers.

CREATE TABLE paper_changes (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    seq       BIGINT  NOT NULL,
    store_id  TEXT    NOT NULL
);
INSERT INTO paper_changes (id, seq, store_id)
SELECT 1, COALESCE(MAX(id), 0), md5(random()::text || clock_timestamp()::text) FROM papers;

ALTER TABLE papers ADD COLUMN change_seq BIGINT NOT NULL DEFAULT 0;
UPDATE papers SET change_seq = id;
CREATE INDEX papers_change_seq ON papers(change_seq);

CREATE FUNCTION papers_take_a_change_seq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.change_seq IS DISTINCT FROM OLD.change_seq THEN
        RETURN NEW;  -- set on purpose by the statement itself
    END IF;
    UPDATE paper_changes SET seq = seq + 1 WHERE id = 1 RETURNING seq INTO NEW.change_seq;
    RETURN NEW;
END
$$;

CREATE TRIGGER papers_take_a_change_seq BEFORE INSERT OR UPDATE ON papers
FOR EACH ROW EXECUTE FUNCTION papers_take_a_change_seq();
