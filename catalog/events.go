package catalog

import (
	"context"
	"time"
	"unicode/utf8"

	"director/errcode"
)

// Audit event kinds.
const (
	EventSessionStart = "session_start"
	EventAction       = "action"
	EventSessionEnd   = "session_end"
)

// DefaultKeepEvents is how many audit events TrimEvents keeps by default.
const DefaultKeepEvents = 10000

// maxDetail bounds the detail text of one event.
const maxDetail = 2000

// Event is one audit event. It never holds secrets: no typed text, no cookie
// values, no credentials; Detail is for things like an end reason or a URL
// pattern, and the caller must keep it free of secrets.
type Event struct {
	ID         int64     `json:"id"`
	At         time.Time `json:"at"`
	SessionID  string    `json:"session_id,omitempty"`
	Profile    string    `json:"profile,omitempty"`
	Kind       string    `json:"kind"`             // EventSessionStart, EventAction, EventSessionEnd
	Action     string    `json:"action,omitempty"` // navigate, click, type, …
	Tab        string    `json:"tab,omitempty"`    // t1, t2, …
	Domain     string    `json:"domain,omitempty"`
	DurationMS int64     `json:"duration_ms"`
	ResultCode string    `json:"result_code,omitempty"` // "" or "ok" on success, else an errcode.Code
	Detail     string    `json:"detail,omitempty"`
}

// EventFilter selects events; empty fields match everything.
type EventFilter struct {
	Profile string
	Session string
	Limit   int // at most this many, newest first; <= 0 = all
}

// AddEvent appends e (At = now when zero). It does not trim; call TrimEvents
// now and then, for example when a session ends.
func (db *DB) AddEvent(ctx context.Context, e Event) error {
	if e.Kind == "" {
		return errcode.New(errcode.Internal, "catalog: audit event without a kind")
	}
	if e.At.IsZero() {
		e.At = now()
	}
	if len(e.Detail) > maxDetail {
		cut := maxDetail
		for cut > 0 && !utf8.RuneStart(e.Detail[cut]) {
			cut--
		}
		e.Detail = e.Detail[:cut]
	}
	_, err := db.sql.ExecContext(ctx,
		`INSERT INTO audit_events (at, session_id, profile, kind, action, tab, domain, duration_ms, result_code, detail)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		fmtTime(e.At), e.SessionID, e.Profile, e.Kind, e.Action, e.Tab, e.Domain, e.DurationMS, e.ResultCode, e.Detail)
	if err != nil {
		return queryErr(err, "cannot record an audit event")
	}
	return nil
}

// ListEvents returns the events that match f, newest first.
func (db *DB) ListEvents(ctx context.Context, f EventFilter) ([]Event, error) {
	q := `SELECT id, at, session_id, profile, kind, action, tab, domain, duration_ms, result_code, detail
		FROM audit_events WHERE 1 = 1`
	var args []any
	if f.Profile != "" {
		q += ` AND profile = ?`
		args = append(args, f.Profile)
	}
	if f.Session != "" {
		q += ` AND session_id = ?`
		args = append(args, f.Session)
	}
	q += ` ORDER BY at DESC, id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := db.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, queryErr(err, "cannot list audit events")
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var at string
		if err := rows.Scan(&e.ID, &at, &e.SessionID, &e.Profile, &e.Kind, &e.Action, &e.Tab, &e.Domain,
			&e.DurationMS, &e.ResultCode, &e.Detail); err != nil {
			return nil, queryErr(err, "cannot list audit events")
		}
		if e.At, err = parseTime(at); err != nil {
			return nil, queryErr(err, "cannot list audit events")
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, queryErr(err, "cannot list audit events")
	}
	return out, nil
}

// TrimEvents deletes all but the newest keep events (keep <= 0:
// DefaultKeepEvents) and returns how many it deleted.
func (db *DB) TrimEvents(ctx context.Context, keep int) (int64, error) {
	if keep <= 0 {
		keep = DefaultKeepEvents
	}
	res, err := db.sql.ExecContext(ctx,
		`DELETE FROM audit_events WHERE id NOT IN
			(SELECT id FROM audit_events ORDER BY at DESC, id DESC LIMIT ?)`, keep)
	if err != nil {
		return 0, queryErr(err, "cannot trim audit events")
	}
	n, _ := res.RowsAffected()
	return n, nil
}
