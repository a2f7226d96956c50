package errcode

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code. Its string values never
// change once released: scripts and agents act on them.
type Code string

// The error codes of the DESIGN.md contract, plus invalid_input for bad
// command-line arguments and interrupted for a command stopped by a signal
// (Ctrl-C, SIGTERM) or its caller's cancellation.
const (
	DomainBlocked       Code = "domain_blocked"
	SessionNotFound     Code = "session_not_found"
	TabNotFound         Code = "tab_not_found"
	ElementNotFound     Code = "element_not_found"
	ElementStale        Code = "element_stale"
	Timeout             Code = "timeout"
	BrowserLaunchFailed Code = "browser_launch_failed"
	InvalidAction       Code = "invalid_action"
	InvalidInput        Code = "invalid_input"
	HumanRequired       Code = "human_required"
	ProfileInUse        Code = "profile_in_use"
	ProfileNotFound     Code = "profile_not_found"
	SnapshotNotFound    Code = "snapshot_not_found"
	SnapshotCorrupt     Code = "snapshot_corrupt"
	UnsafeArchive       Code = "unsafe_archive"
	DecryptFailed       Code = "decrypt_failed"
	StorageUnavailable  Code = "storage_unavailable"
	Interrupted         Code = "interrupted"
	Internal            Code = "internal_error"
)

// Exit statuses of the DESIGN.md contract.
const (
	ExitOK            = 0
	ExitFailure       = 1
	ExitUsage         = 2
	ExitHumanRequired = 3
	ExitDomainBlocked = 4
)

// Error is an error with a stable code and a hint saying what to do next.
type Error struct {
	Code Code
	Msg  string // what went wrong, one line, no secrets
	Hint string // what to do next; may be empty
	Err  error  // the underlying cause; may be nil
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Msg
	}
	if e.Msg == "" {
		return e.Err.Error()
	}
	return e.Msg + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, errcode.New(errcode.Timeout, "")) matches by code.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code && t.Msg == "" && t.Err == nil
	}
	return false
}

// New returns an error with code and a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns err with a code and a formatted message; it returns nil when
// err is nil.
func Wrap(err error, code Code, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: err}
}

// WithHint sets the hint and returns e, for chaining.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// Hinted wraps err with a code, message and hint.
func Hinted(err error, code Code, hint, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Hint: hint, Err: err}
}

// Of returns the code of the outermost *Error in err's chain, "" for a nil
// error and Internal for an error that carries no code.
func Of(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// HintOf returns the first non-empty hint in err's chain.
func HintOf(err error) string {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return ""
		}
		if e.Hint != "" {
			return e.Hint
		}
		err = e.Err
	}
	return ""
}

// ExitStatus maps err to the process exit status of the contract.
func ExitStatus(err error) int {
	switch Of(err) {
	case "":
		return ExitOK
	case InvalidAction, InvalidInput:
		return ExitUsage
	case HumanRequired:
		return ExitHumanRequired
	case DomainBlocked:
		return ExitDomainBlocked
	default:
		return ExitFailure
	}
}
