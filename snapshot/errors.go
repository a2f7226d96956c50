package snapshot

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"director/errcode"
)

const (
	hintAltered        = "the archive was altered or is not a director snapshot; restore another snapshot with `director profile snapshots <profile>`"
	hintCorrupt        = "the archive is damaged or incomplete; restore another snapshot with `director profile snapshots <profile>`"
	hintUpgrade        = "this snapshot was written by another director version; upgrade director or restore another snapshot with `director profile snapshots <profile>`"
	hintNewer          = "upgrade director on this machine: every machine that restores or verifies from a shared store needs a director as new as the newest one that snapshots to it; an older snapshot still restores by its id (`director profile snapshots <profile>`)"
	hintStoredManifest = "the manifest stored beside the archive does not belong to it; the archive itself may still restore (it carries its own manifest), else restore another snapshot"
	hintBusy           = "close Chrome on this profile (a graceful close, so it flushes its files) and take the snapshot again"
)

// unsafeArchive reports an archive that tries to do something a snapshot never does.
func unsafeArchive(format string, args ...any) error {
	return errcode.New(errcode.UnsafeArchive, "unsafe archive: "+format, args...).WithHint(hintAltered)
}

// UnpackedLimitError is in the chain of the error for an archive over the
// unpacked-size limit (the decompression-bomb guard): Create's refusal of a
// profile whose archive would unpack to more than
// CreateOptions.MaxUnpackedBytes (invalid_input), and Restore's or
// Verify's of an archive whose manifest declares more than
// ExtractOptions.MaxUnpackedBytes, or that unpacks to more while its
// manifest's entries could (unsafe_archive). Need is a limit that takes
// the archive; a stream that unpacks to more than its own manifest allows is
// a bomb, and its error has no UnpackedLimitError.
type UnpackedLimitError struct {
	Limit int64 // the limit that refused the archive
	Need  int64 // a limit that takes it
	msg   string
}

func (e *UnpackedLimitError) Error() string { return e.msg }

// overUnpacked reports an archive over the unpacked-size limit limit that
// a limit of need takes. A need that is not over limit (a hostile
// manifest's sizes can add up past int64) names no limit.
func overUnpacked(code errcode.Code, hint string, limit, need int64, format string, args ...any) error {
	if need <= limit {
		return errcode.New(code, format, args...).WithHint("%s", hint)
	}
	return &errcode.Error{Code: code, Hint: hint, Err: &UnpackedLimitError{Limit: limit, Need: need, msg: fmt.Sprintf(format, args...)}}
}

// NewerFormatError is in the chain of the error for a manifest whose format
// version is newer than FormatVersion: a snapshot written by a newer
// director. It is not damage: a caller that passes over a damaged manifest
// (to find the newest snapshot it can read) must not pass over this one, or
// it would quietly go back to an older login.
type NewerFormatError struct {
	Version int // the manifest's format_version
}

func (e *NewerFormatError) Error() string {
	return fmt.Sprintf("the snapshot was written by a newer director: its archive format is %d, and this director reads formats 1 to %d", e.Version, FormatVersion)
}

// newerFormat reports a manifest of format version v, newer than this
// build reads. The code stays snapshot_corrupt (what this build cannot
// read), the message and hint say why.
func newerFormat(v int) error {
	return &errcode.Error{Code: errcode.SnapshotCorrupt, Hint: hintNewer, Err: &NewerFormatError{Version: v}}
}

// corrupt reports damage: a hash mismatch, a broken compressed stream, a truncation.
func corrupt(err error, format string, args ...any) error {
	msg := "corrupt snapshot: " + fmt.Sprintf(format, args...)
	if err == nil {
		return errcode.New(errcode.SnapshotCorrupt, "%s", msg).WithHint(hintCorrupt)
	}
	return errcode.Hinted(err, errcode.SnapshotCorrupt, hintCorrupt, "%s", msg)
}

// internal reports a local I/O failure.
func internal(err error, format string, args ...any) error {
	return errcode.Wrap(err, errcode.Internal, format, args...)
}

// ctxErr turns a context error into a coded one.
func ctxErr(err error, what string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errcode.Wrap(err, errcode.Timeout, "%s timed out", what)
	}
	return errcode.Wrap(err, errcode.Interrupted, "%s cancelled", what)
}

// diskFull turns a restore's failure to write because the file system
// holding dir is full (ENOSPC, or EDQUOT: the user's quota) into an error
// that says so, names dir and what to do; other errors are returned as they
// are. A restore fails only before its swap, so the old profile is intact.
func diskFull(err error, dir string) error {
	if err == nil || !(errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
		return err
	}
	return errcode.Hinted(err, errcode.Internal,
		fmt.Sprintf("free space on that disk (see `df -h %s`), or restore with --home on a larger one: a restore needs room for the whole profile "+
			"beside the old one until it swaps them; the old profile is untouched and nothing of the restore was left", dir),
		"no space left on the disk holding %s", dir)
}
