-- Who is sending a claimed digest run, and until when (as ../0005_digest_run_leases.sql).
ALTER TABLE digest_runs ADD COLUMN claimed_by TEXT;
ALTER TABLE digest_runs ADD COLUMN lease_until TEXT;
