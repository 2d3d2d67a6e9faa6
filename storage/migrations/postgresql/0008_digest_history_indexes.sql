-- The open runs, and digest history by time (as ../0008_digest_history_indexes.sql).
CREATE INDEX digest_runs_claimed ON digest_runs(status) WHERE status = 'claimed';
CREATE INDEX digest_runs_finished_at ON digest_runs(finished_at);
CREATE INDEX posted_messages_posted_at ON posted_messages(posted_at);
