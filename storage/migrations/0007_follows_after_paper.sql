-- Which papers are new to a follow: those with an id above `after_paper_id`, the largest paper id
-- when the person followed (ids only grow, so a paper stored after the follow has a larger one, even
-- within the same second). Follows made before this version count papers added from the second
-- before they followed.
ALTER TABLE author_follows ADD COLUMN after_paper_id INTEGER;
UPDATE author_follows SET after_paper_id = (
    SELECT COALESCE(MAX(p.id), 0) FROM papers p WHERE p.added_at < author_follows.followed_at
);
