-- The process running the digests looks for open runs every few seconds: an index holding only those.
CREATE INDEX digest_runs_claimed ON digest_runs(status) WHERE status = 'claimed';
-- The daily prune of digest history past its retention finds old rows by their time.
CREATE INDEX digest_runs_finished_at ON digest_runs(finished_at);
CREATE INDEX posted_messages_posted_at ON posted_messages(posted_at);
