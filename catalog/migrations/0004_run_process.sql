-- 0004: a run records the process that runs it.
--
-- host, pid and proc_start name the director process of a running run: its
-- machine's hostname, its pid, and what tells it from a later process given
-- the same pid (on Linux the boot id, the pid namespace and the start time
-- in clock ticks from /proc/PID/stat; NULL where the system does not say). A run still marked
-- running whose process is gone, or whose pid now belongs to another
-- process, was killed (kill -9, a crash, a reboot): DB.CloseDeadRuns closes
-- it. That is the only proof an incognito run has, since it holds no profile
-- lock. Rows written before this migration have NULL here and are never
-- closed by it; a profile's runs are still closed under its lock
-- (DB.AbandonRuns).

ALTER TABLE runs ADD COLUMN host TEXT;
ALTER TABLE runs ADD COLUMN pid INTEGER;
ALTER TABLE runs ADD COLUMN proc_start TEXT;

-- The sweep looks only at the running runs of one host.
CREATE INDEX runs_running ON runs (host) WHERE status = 'running';
