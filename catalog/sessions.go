package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"director/errcode"
)

// Session states recorded by the catalog.
const (
	SessionActive = "active"
	SessionEnded  = "ended"
)

// Session is one live browser bound to a profile (or incognito).
type Session struct {
	ID          string    `json:"id"`                // 6 chars of [a-z2-7]
	Profile     string    `json:"profile,omitempty"` // "" = incognito (NULL)
	State       string    `json:"state"`
	StartedAt   time.Time `json:"started_at"`
	EndedAt     time.Time `json:"ended_at,omitzero"`
	EndReason   string    `json:"end_reason,omitempty"`
	ActionCount int64     `json:"action_count"`
	RunID       string    `json:"run_id,omitempty"` // the run that drives it, "" for none
}

// SessionEnd is how a session ended.
type SessionEnd struct {
	Reason      string    // completed, failed, idle_timeout, max_duration, …
	ActionCount int64     // actions performed
	EndedAt     time.Time // now when zero
}

// StartSession records a session and returns it with ID (NewID when empty),
// State (SessionActive when empty) and StartedAt (now when zero) filled in. A
// RunID must name a run already started with StartRun.
func (db *DB) StartSession(ctx context.Context, s Session) (Session, error) {
	if s.ID == "" {
		s.ID = NewID()
	}
	if !ValidID(s.ID) {
		return s, errcode.New(errcode.InvalidInput, "bad session id %q", s.ID).WithHint("session ids are 6 characters of a-z and 2-7")
	}
	if s.State == "" {
		s.State = SessionActive
	}
	if s.StartedAt.IsZero() {
		s.StartedAt = now()
	}
	_, err := db.sql.ExecContext(ctx,
		`INSERT INTO sessions (id, profile, state, started_at, ended_at, end_reason, action_count, run_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		s.ID, nullString(s.Profile), s.State, fmtTime(s.StartedAt), fmtNullTime(s.EndedAt), s.EndReason, s.ActionCount, nullString(s.RunID))
	if isConstraint(err) {
		return s, &errcode.Error{Code: errcode.Internal, Msg: "catalog: session " + s.ID,
			Hint: "session ids are unique; start the session again", Err: fmt.Errorf("%w (%v)", ErrExists, err)}
	}
	if err != nil {
		return s, queryErr(err, "cannot record session "+s.ID)
	}
	return s, nil
}

// EndSession records how session id ended and sets its state to
// SessionEnded.
func (db *DB) EndSession(ctx context.Context, id string, e SessionEnd) error {
	if e.EndedAt.IsZero() {
		e.EndedAt = now()
	}
	res, err := db.sql.ExecContext(ctx,
		`UPDATE sessions SET state = ?, ended_at = ?, end_reason = ?, action_count = ? WHERE id = ?`,
		SessionEnded, fmtTime(e.EndedAt), e.Reason, e.ActionCount, id)
	if err != nil {
		return queryErr(err, "cannot record the end of session "+id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return sessionNotFound(id)
	}
	return nil
}

func sessionNotFound(id string) error {
	return errcode.New(errcode.SessionNotFound, "no session %q in the catalog", id).
		WithHint("list recent sessions with: `director audit`")
}

const sessionCols = `id, profile, state, started_at, ended_at, end_reason, action_count, run_id`

func scanSession(r rowScanner) (Session, error) {
	var s Session
	var profile, ended, run sql.NullString
	var started string
	if err := r.Scan(&s.ID, &profile, &s.State, &started, &ended, &s.EndReason, &s.ActionCount, &run); err != nil {
		return s, err
	}
	s.Profile, s.RunID = profile.String, run.String
	var err error
	if s.StartedAt, err = parseTime(started); err != nil {
		return s, err
	}
	s.EndedAt, err = parseNullTime(ended)
	return s, err
}

// GetSession returns session id, or a session_not_found error.
func (db *DB) GetSession(ctx context.Context, id string) (Session, error) {
	s, err := scanSession(db.sql.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, sessionNotFound(id)
	}
	if err != nil {
		return s, queryErr(err, "cannot read session "+id)
	}
	return s, nil
}

// ListSessions returns the sessions of profile ("" = all), newest first, at
// most limit of them (limit <= 0: all).
func (db *DB) ListSessions(ctx context.Context, profile string, limit int) ([]Session, error) {
	q, args := byProfileNewestFirst(sessionCols, "sessions", "started_at", profile, limit)
	return queryAll(ctx, db, "cannot list sessions", q, args, scanSession)
}
