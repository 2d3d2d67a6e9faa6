-- The header of a digest run (or its "nothing new" line) is reserved before it goes out and confirmed
-- with its message id after, like each paper in digest_items: a retry or a resume then sends it again
-- only while Discord still dedupes its nonce, and never after it was confirmed.
ALTER TABLE digest_runs ADD COLUMN header_sent_at TEXT;
ALTER TABLE digest_runs ADD COLUMN header_message_id INTEGER;

-- Runs interrupted before this version sent their header with their first paper, under a nonce no
-- repeat can match: mark it attempted long ago, so it is never sent again.
UPDATE digest_runs SET header_sent_at = '1970-01-01T00:00:00+00:00'
 WHERE EXISTS (SELECT 1 FROM digest_items WHERE digest_items.run_id = digest_runs.id AND sent_at IS NOT NULL);
