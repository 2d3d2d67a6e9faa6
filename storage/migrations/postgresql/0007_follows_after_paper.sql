-- Which papers are new to a follow (as ../0007_follows_after_paper.sql).
ALTER TABLE author_follows ADD COLUMN after_paper_id BIGINT;
UPDATE author_follows SET after_paper_id = (
    SELECT COALESCE(MAX(p.id), 0) FROM papers p WHERE p.added_at < author_follows.followed_at
);
