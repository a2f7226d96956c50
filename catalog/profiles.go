package catalog

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"director/errcode"
)

// Profile is one row of the profiles table. The profile directory on disk is
// the truth about which profiles exist; this row records when a profile was
// created and last used.
type Profile struct {
	Name       string    `json:"name"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
	Note       string    `json:"note,omitempty"`
	// UnsavedSince is when `director profile open` (or a run whose login
	// check passed) last left the profile with a login no snapshot has
	// (zero: nothing unsaved).
	UnsavedSince time.Time `json:"unsaved_since,omitzero"`
}

// UpsertProfile records p. A new row takes p.CreatedAt (now when zero); an
// existing row keeps its creation time, and takes p.LastUsedAt and p.Note
// only when they are set.
func (db *DB) UpsertProfile(ctx context.Context, p Profile) error {
	if p.Name == "" {
		return errcode.New(errcode.Internal, "catalog: profile without a name")
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = now()
	}
	_, err := db.sql.ExecContext(ctx,
		`INSERT INTO profiles (name, created_at, last_used_at, note) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET
			last_used_at = COALESCE(excluded.last_used_at, profiles.last_used_at),
			note = CASE WHEN excluded.note = '' THEN profiles.note ELSE excluded.note END`,
		p.Name, fmtTime(p.CreatedAt), fmtNullTime(p.LastUsedAt), p.Note)
	if err != nil {
		return queryErr(err, "cannot record profile "+p.Name)
	}
	return nil
}

// TouchProfile records that profile name was used at t, creating its row
// when missing.
func (db *DB) TouchProfile(ctx context.Context, name string, t time.Time) error {
	return db.UpsertProfile(ctx, Profile{Name: name, CreatedAt: t, LastUsedAt: t})
}

const profileCols = `name, created_at, last_used_at, note, unsaved_since`

func scanProfile(r rowScanner) (Profile, error) {
	var p Profile
	var created string
	var used, unsaved sql.NullString
	if err := r.Scan(&p.Name, &created, &used, &p.Note, &unsaved); err != nil {
		return p, err
	}
	var err error
	if p.CreatedAt, err = parseTime(created); err != nil {
		return p, err
	}
	if p.LastUsedAt, err = parseNullTime(used); err != nil {
		return p, err
	}
	p.UnsavedSince, err = parseNullTime(unsaved)
	return p, err
}

// SetUnsaved records that the local profile name holds changes since t that
// no snapshot has (a login by hand in `director profile open`), creating
// its row when missing. A zero t clears the mark, as a snapshot or a
// restore of the profile does.
func (db *DB) SetUnsaved(ctx context.Context, name string, t time.Time) error {
	if err := db.UpsertProfile(ctx, Profile{Name: name}); err != nil {
		return err
	}
	if _, err := db.sql.ExecContext(ctx, `UPDATE profiles SET unsaved_since = ? WHERE name = ?`, fmtNullTime(t), name); err != nil {
		return queryErr(err, "cannot record profile "+name)
	}
	return nil
}

// GetProfile returns the row of name, or a profile_not_found error.
func (db *DB) GetProfile(ctx context.Context, name string) (Profile, error) {
	p, err := scanProfile(db.sql.QueryRowContext(ctx, `SELECT `+profileCols+` FROM profiles WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return p, errcode.New(errcode.ProfileNotFound, "profile %q is not in the catalog", name).
			WithHint("list profiles with: `director profile list`, or create it with: `director profile create %s`", name)
	}
	if err != nil {
		return p, queryErr(err, "cannot read profile "+name)
	}
	return p, nil
}

// ListProfiles returns every profile row by name.
func (db *DB) ListProfiles(ctx context.Context) ([]Profile, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT `+profileCols+` FROM profiles ORDER BY name`)
	if err != nil {
		return nil, queryErr(err, "cannot list profiles")
	}
	defer rows.Close()
	var out []Profile
	for rows.Next() {
		p, err := scanProfile(rows)
		if err != nil {
			return nil, queryErr(err, "cannot list profiles")
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, queryErr(err, "cannot list profiles")
	}
	return out, nil
}

// DeleteProfile removes the row of name; a missing row is not an error. The
// profile's snapshot rows stay (delete them with DeleteSnapshot).
func (db *DB) DeleteProfile(ctx context.Context, name string) error {
	if _, err := db.sql.ExecContext(ctx, `DELETE FROM profiles WHERE name = ?`, name); err != nil {
		return queryErr(err, "cannot delete profile "+name)
	}
	return nil
}
