-- The header of a digest run is reserved before it goes out and confirmed with its message id after
-- (as ../0002_digest_header_state.sql).
ALTER TABLE digest_runs ADD COLUMN header_sent_at TEXT;
ALTER TABLE digest_runs ADD COLUMN header_message_id BIGINT;

UPDATE digest_runs SET header_sent_at = '1970-01-01T00:00:00+00:00'
 WHERE EXISTS (SELECT 1 FROM digest_items WHERE digest_items.run_id = digest_runs.id AND sent_at IS NOT NULL);
