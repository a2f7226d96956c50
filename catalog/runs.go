package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"director/errcode"
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
}

// RunEnd is how a run finished.
type RunEnd struct {
	Status     string    // RunOK, RunFailed, …
	ErrorCode  string    // an errcode.Code, "" on success
	SnapshotID string    // the snapshot the run took, "" for none
	EndedAt    time.Time // now when zero
}

// StartRun records a run as running and returns it with its ID (NewID when
// r.ID is empty), Status and StartedAt (now when zero) filled in.
func (db *DB) StartRun(ctx context.Context, r Run) (Run, error) {
	if r.ID == "" {
		r.ID = NewID()
	}
	if r.Status == "" {
		r.Status = RunRunning
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = now()
	}
	_, err := db.sql.ExecContext(ctx,
		`INSERT INTO runs (id, workflow, file, profile, status, error_code, started_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Workflow, r.File, nullString(r.Profile), r.Status, r.ErrorCode, fmtTime(r.StartedAt))
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

const runCols = `id, workflow, file, profile, status, error_code, started_at, ended_at, snapshot_id`

func scanRun(r rowScanner) (Run, error) {
	var run Run
	var profile, ended, snap sql.NullString
	var started string
	if err := r.Scan(&run.ID, &run.Workflow, &run.File, &profile, &run.Status, &run.ErrorCode, &started, &ended, &snap); err != nil {
		return run, err
	}
	run.Profile, run.SnapshotID = profile.String, snap.String
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
// lock to prove them dead and are left alone.
func (db *DB) AbandonRuns(ctx context.Context, profile string) (Abandoned, error) {
	var a Abandoned
	if profile == "" {
		return a, nil
	}
	fail := func(err error) (Abandoned, error) {
		return Abandoned{}, queryErr(err, "cannot close the runs of profile "+profile+" that a killed director left open")
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	at := fmtTime(now())
	collect := func(q string, args ...any) ([]string, error) {
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
	if a.Runs, err = collect(`UPDATE runs SET status = ?, error_code = ?, ended_at = ? WHERE profile = ? AND status = ? RETURNING id`,
		RunFailed, string(errcode.Interrupted), at, profile, RunRunning); err != nil {
		return fail(err)
	}
	if a.Sessions, err = collect(`UPDATE sessions SET state = ?, end_reason = ?, ended_at = ? WHERE profile = ? AND state = ? RETURNING id`,
		SessionEnded, "failed", at, profile, SessionActive); err != nil {
		return fail(err)
	}
	for _, id := range a.Sessions {
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit_events (at, session_id, profile, kind, result_code, detail) VALUES (?, ?, ?, ?, ?, ?)`,
			at, id, profile, EventSessionEnd, string(errcode.Interrupted),
			"reason=failed: the director process running it stopped without ending it"); err != nil {
			return fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return a, nil
}
