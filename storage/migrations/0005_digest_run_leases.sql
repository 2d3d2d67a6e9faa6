-- Who is sending a claimed digest run, and until when: the process delivering a run renews its lease
-- while it sends; a run whose lease ran out (its process died) is taken over by another process, which
-- resumes it. Runs claimed before this version have neither: any process may take them over.
ALTER TABLE digest_runs ADD COLUMN claimed_by TEXT;
ALTER TABLE digest_runs ADD COLUMN lease_until TEXT;
