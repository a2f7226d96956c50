package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"director/errcode"
	"director/internal/proc"
)

// Run statuses. A run is RunRunning from StartRun until FinishRun.
const (
	RunRunning       = "running"
	RunOK            = "ok"
	RunFailed        = "failed"
	RunHumanRequired = "human_required"
	RunDomainBlocked = "domain_blocked"
)

// Run is one workflow run.
type Run struct {
	ID         string    `json:"id"`
	Workflow   string    `json:"workflow"`
	File       string    `json:"file,omitempty"`
	Profile    string    `json:"profile,omitempty"` // "" for an incognito run
	Status     string    `json:"status"`
	ErrorCode  string    `json:"error_code,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	EndedAt    time.Time `json:"ended_at,omitzero"`
	SnapshotID string    `json:"snapshot_id,omitempty"` // the snapshot the run took, if any
	// Host, PID and ProcStart name the director process that runs it (see
	// proc.Process), so that CloseDeadRuns can tell a killed run from a
	// live one. Empty in rows written before migration 0004.
	Host      string `json:"host,omitempty"`
	PID       int    `json:"pid,omitempty"`
	ProcStart string `json:"proc_start,omitempty"`
}

// RunEnd is how a run finished.
type RunEnd struct {
	Status     string    // RunOK, RunFailed, …
	ErrorCode  string    // an errcode.Code, "" on success
	SnapshotID string    // the snapshot the run took, "" for none
	EndedAt    time.Time // now when zero
}

// StartRun records a run as running and returns it with its ID (NewID when
// r.ID is empty), Status and StartedAt (now when zero) filled in, and the
// process that runs it (this one when r.PID is zero; none when even the
// hostname cannot be read, and CloseDeadRuns then never closes it).
func (db *DB) StartRun(ctx context.Context, r Run) (Run, error) {
	if r.ID == "" {
		r.ID = NewID()
	}
	if r.PID == 0 {
		if self, err := proc.Self(); err == nil {
			r.Host, r.PID, r.ProcStart = self.Host, self.PID, self.Start
		}
	}
	if r.Status == "" {
		r.Status = RunRunning
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = now()
	}
	_, err := db.sql.ExecContext(ctx,
		`INSERT INTO runs (id, workflow, file, profile, status, error_code, started_at, host, pid, proc_start) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Workflow, r.File, nullString(r.Profile), r.Status, r.ErrorCode, fmtTime(r.StartedAt),
		nullString(r.Host), nullInt(r.PID), nullString(r.ProcStart))
	if isConstraint(err) {
		return r, &errcode.Error{Code: errcode.Internal, Msg: "catalog: run " + r.ID,
			Hint: "run ids are unique; start the run again", Err: fmt.Errorf("%w (%v)", ErrExists, err)}
	}
	if err != nil {
		return r, queryErr(err, "cannot record run "+r.ID)
	}
	return r, nil
}

// FinishRun records how run id ended.
func (db *DB) FinishRun(ctx context.Context, id string, e RunEnd) error {
	if e.EndedAt.IsZero() {
		e.EndedAt = now()
	}
	if e.Status == "" {
		return errcode.New(errcode.Internal, "catalog: run %s finished without a status", id)
	}
	res, err := db.sql.ExecContext(ctx,
		`UPDATE runs SET status = ?, error_code = ?, ended_at = ?, snapshot_id = ? WHERE id = ?`,
		e.Status, e.ErrorCode, fmtTime(e.EndedAt), nullString(e.SnapshotID), id)
	if err != nil {
		return queryErr(err, "cannot record the end of run "+id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errcode.New(errcode.Internal, "catalog: no run %q to finish", id).WithHint("start runs with StartRun before finishing them")
	}
	return nil
}

const runCols = `id, workflow, file, profile, status, error_code, started_at, ended_at, snapshot_id, host, pid, proc_start`

func scanRun(r rowScanner) (Run, error) {
	var run Run
	var profile, ended, snap, host, procStart sql.NullString
	var pid sql.NullInt64
	var started string
	if err := r.Scan(&run.ID, &run.Workflow, &run.File, &profile, &run.Status, &run.ErrorCode, &started, &ended, &snap, &host, &pid, &procStart); err != nil {
		return run, err
	}
	run.Profile, run.SnapshotID = profile.String, snap.String
	run.Host, run.PID, run.ProcStart = host.String, int(pid.Int64), procStart.String
	var err error
	if run.StartedAt, err = parseTime(started); err != nil {
		return run, err
	}
	run.EndedAt, err = parseNullTime(ended)
	return run, err
}

// GetRun returns run id.
func (db *DB) GetRun(ctx context.Context, id string) (Run, error) {
	r, err := scanRun(db.sql.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errcode.New(errcode.InvalidInput, "no run %q in the catalog", id).WithHint("check the run id")
	}
	if err != nil {
		return r, queryErr(err, "cannot read run "+id)
	}
	return r, nil
}

// ListRuns returns the runs of profile ("" = all), newest first, at most
// limit of them (limit <= 0: all).
func (db *DB) ListRuns(ctx context.Context, profile string, limit int) ([]Run, error) {
	q, args := byProfileNewestFirst(runCols, "runs", "started_at", profile, limit)
	return queryAll(ctx, db, "cannot list runs", q, args, scanRun)
}

// Abandoned is what AbandonRuns found and closed.
type Abandoned struct {
	Runs     []string // run ids
	Sessions []string // session ids
}

// AbandonRuns closes the runs of profile that are still running, and their
// profile's sessions that are still active: a director process that was
// killed (kill -9, a crash, a reboot) never finished them. Call it only
// while holding the profile's lock, which every run holds from start to
// end, so none of them can still be alive. The runs become RunFailed with
// error code interrupted, the sessions ended with reason failed; each
// session also gets a session_end audit event, so the audit trail shows
// its end. ended_at is the time they were found. Incognito runs have no
// lock to prove them dead: CloseDeadRuns closes those.
func (db *DB) AbandonRuns(ctx context.Context, profile string) (Abandoned, error) {
	var a Abandoned
	if profile == "" {
		return a, nil
	}
	err := db.closeRuns(ctx, func(tx *sql.Tx, at string) error {
		var err error
		if a.Runs, err = collectIDs(ctx, tx, `UPDATE runs SET status = ?, error_code = ?, ended_at = ? WHERE profile = ? AND status = ? RETURNING id`,
			RunFailed, string(errcode.Interrupted), at, profile, RunRunning); err != nil {
			return err
		}
		a.Sessions, err = endSessions(ctx, tx, at, `profile = ?`, profile)
		return err
	})
	if err != nil {
		return Abandoned{}, queryErr(err, "cannot close the runs of profile "+profile+" that a killed director left open")
	}
	return a, nil
}

// CloseDeadRuns closes the runs of this host that are still running but
// whose director process is gone: its pid no longer runs, or now belongs to
// another process (another start time, or a boot since), as proc.Alive
// tells. Each becomes RunFailed with error code interrupted, and its
// sessions that are still active end with reason failed and a session_end
// audit event, as in AbandonRuns. It is the proof an incognito run needs,
// having no profile lock, and it closes a profile's killed run too. A run
// of another host (a catalog on a shared disk), one whose process is alive
// or cannot be proven gone, and one recorded without its process (before
// migration 0004) are left alone.
func (db *DB) CloseDeadRuns(ctx context.Context) (Abandoned, error) {
	var a Abandoned
	self, err := proc.Self()
	if err != nil {
		return a, errcode.Hinted(err, errcode.Internal, "check the machine's hostname", "cannot tell which runs this machine left open")
	}
	err = db.closeRuns(ctx, func(tx *sql.Tx, at string) error {
		// A write transaction (IMMEDIATE): a run that ends meanwhile is
		// finished after this one commits, and "status = running" below
		// stays true until then.
		rows, err := tx.QueryContext(ctx, `SELECT id, pid, COALESCE(proc_start, '') FROM runs WHERE status = ? AND host = ? AND pid IS NOT NULL`,
			RunRunning, self.Host)
		if err != nil {
			return err
		}
		var dead []string
		for rows.Next() {
			var id, start string
			var pid int
			if err := rows.Scan(&id, &pid, &start); err != nil {
				rows.Close()
				return err
			}
			if !proc.Alive(proc.Process{Host: self.Host, PID: pid, Start: start}) {
				dead = append(dead, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range dead {
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, error_code = ?, ended_at = ? WHERE id = ? AND status = ?`,
				RunFailed, string(errcode.Interrupted), at, id, RunRunning); err != nil {
				return err
			}
			sessions, err := endSessions(ctx, tx, at, `run_id = ?`, id)
			if err != nil {
				return err
			}
			a.Runs = append(a.Runs, id)
			a.Sessions = append(a.Sessions, sessions...)
		}
		return nil
	})
	if err != nil {
		return Abandoned{}, queryErr(err, "cannot close the runs that a killed director left open")
	}
	return a, nil
}

// closeRuns runs fn in one write transaction, with at the time to
// record as the end of what it closes.
func (db *DB) closeRuns(ctx context.Context, fn func(tx *sql.Tx, at string) error) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx, fmtTime(now())); err != nil {
		return err
	}
	return tx.Commit()
}

// endSessions ends the active sessions that where (an SQL condition on
// sessions, with args) selects, with reason failed, and gives each its
// session_end audit event; it returns their ids.
func endSessions(ctx context.Context, tx *sql.Tx, at, where string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `UPDATE sessions SET state = ?, end_reason = ?, ended_at = ? WHERE state = ? AND `+where+` RETURNING id, COALESCE(profile, '')`,
		append([]any{SessionEnded, "failed", at, SessionActive}, args...)...)
	if err != nil {
		return nil, err
	}
	type ended struct{ id, profile string }
	var all []ended
	for rows.Next() {
		var e ended
		if err := rows.Scan(&e.id, &e.profile); err != nil {
			rows.Close()
			return nil, err
		}
		all = append(all, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(all))
	for _, e := range all {
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit_events (at, session_id, profile, kind, result_code, detail) VALUES (?, ?, ?, ?, ?, ?)`,
			at, e.id, e.profile, EventSessionEnd, string(errcode.Interrupted),
			"reason=failed: the director process running it stopped without ending it"); err != nil {
			return nil, err
		}
		ids = append(ids, e.id)
	}
	return ids, nil
}

// collectIDs runs q, which returns one id a row, in tx.
func collectIDs(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
