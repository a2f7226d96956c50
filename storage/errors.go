package storage

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"unicode/utf8"

	"director/errcode"
)

// Problem names the cause of a failed store call, so that `director store
// check` and callers can explain it. The empty Problem means unknown.
type Problem string

// The problems a backend recognises.
const (
	ProblemCredentials Problem = "credentials"    // bad or missing keys, signature mismatch, access denied
	ProblemNoBucket    Problem = "missing_bucket" // the bucket does not exist
	ProblemUnreachable Problem = "unreachable"    // connection refused, DNS failure, TLS failure
	ProblemClockSkew   Problem = "clock_skew"     // the server rejects our clock
	ProblemRegion      Problem = "region"         // the store URL's region is not the server's
	ProblemServer      Problem = "server_error"   // 5xx, throttling
	ProblemTimeout     Problem = "timeout"        // a call ran out of time
	ProblemNotFound    Problem = "not_found"      // the object does not exist
	ProblemExists      Problem = "exists"         // the object already exists
	ProblemTooLarge    Problem = "too_large"      // the body exceeded MaxSize
	ProblemBody        Problem = "body"           // reading the caller's body failed
	ProblemLocal       Problem = "local_folder"   // a file:// store's folder cannot be created, read or written
)

// storeError carries a Problem and whether a retry may help. Backends put it
// under the errcode.Error they return.
type storeError struct {
	problem   Problem
	transient bool
	err       error
}

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// ProblemOf returns the Problem recorded in err's chain, or "".
func ProblemOf(err error) Problem {
	var se *storeError
	if errors.As(err, &se) {
		return se.problem
	}
	if errors.Is(err, ErrTooLarge) {
		return ProblemTooLarge
	}
	return ""
}

func isTransient(err error) bool {
	var se *storeError
	return errors.As(err, &se) && se.transient
}

// problemHint is the generic next step for a problem; backends refine it.
func problemHint(p Problem) string {
	switch p {
	case ProblemUnreachable:
		return "check that the store's endpoint is right and the server is up and reachable from this machine"
	case ProblemClockSkew:
		return "this machine's clock is off; sync it (timedatectl set-ntp true, or chronyc makestep) and retry"
	case ProblemServer:
		return "the store is failing or throttling; retry later"
	case ProblemLocal:
		return "check the store folder's path, permissions and free space"
	case ProblemTimeout:
		return "the store did not answer in time; check the network and retry"
	case ProblemRegion:
		return "set region=REGION in the store URL to the bucket's region"
	default:
		return "retry; if it keeps failing run: `director store check`"
	}
}

// fail builds the coded error a backend returns. what names the call, e.g.
// `put "work/a.tar.zst"`; cause is the underlying error.
func fail(store Store, what string, p Problem, transient bool, hint string, cause error) error {
	if hint == "" {
		hint = problemHint(p)
	}
	var code errcode.Code
	var inner error
	switch p {
	case ProblemNotFound:
		code, inner = errcode.SnapshotNotFound, fmt.Errorf("%w: %w", ErrNotFound, cause)
	case ProblemExists:
		code, inner = errcode.Internal, fmt.Errorf("%w: %w", ErrExists, cause)
	default:
		code, inner = errcode.StorageUnavailable, fmt.Errorf("%w: %w", ErrUnavailable, cause)
	}
	return errcode.Hinted(&storeError{problem: p, transient: transient, err: inner}, code, hint, "%s: %s", store, what)
}

func notFound(store Store, key string) error {
	return fail(store, fmt.Sprintf("get %q", key), ProblemNotFound, false,
		"list what the store holds with: `director profile snapshots` (or `director catalog rebuild`)",
		errors.New("no such object"))
}

func exists(store Store, key string) error {
	return fail(store, fmt.Sprintf("put %q", key), ProblemExists, false,
		"objects are never overwritten; retry to get a new snapshot name, or delete the old object first",
		errors.New("an object with this key already exists"))
}

// netProblem classifies a transport-level error (no HTTP response): its
// problem, whether a retry may help, and false when err is not one.
func netProblem(err error) (Problem, bool, bool) {
	var dnsErr *net.DNSError
	var certErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recErr tls.RecordHeaderError
	switch {
	case errors.As(err, &dnsErr):
		return ProblemUnreachable, dnsErr.IsTemporary || dnsErr.IsTimeout, true
	case errors.As(err, &certErr), errors.As(err, &hostErr), errors.As(err, &recErr),
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return ProblemUnreachable, false, true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return ProblemUnreachable, true, true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return ProblemServer, true, true
	case errors.Is(err, context.DeadlineExceeded):
		return ProblemTimeout, true, true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ProblemTimeout, true, true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return ProblemUnreachable, true, true
	}
	if m := err.Error(); strings.Contains(m, "connection reset") || strings.Contains(m, "broken pipe") || strings.Contains(m, "server closed") {
		return ProblemServer, true, true
	}
	return "", false, false
}

// ctxErr turns the end of ctx into a coded error; it returns nil while ctx
// is alive. The store's own bounds (CallTimeout, IdleTimeout; see watch.go)
// are storage_unavailable, the caller's deadline a timeout, and the
// caller's cancellation (Ctrl-C, SIGTERM) interrupted.
func ctxErr(ctx context.Context, store Store, what string) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if derr := deadlineErr(store, what, context.Cause(ctx)); derr != nil {
		return derr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fail(store, what, ProblemTimeout, false, "the operation ran out of time; retry with a longer timeout", err)
	}
	return errcode.Wrap(err, errcode.Interrupted, "%s: %s: cancelled", store, what)
}

// ErrInvalidKey is wrapped by the errors of malformed keys and prefixes.
var ErrInvalidKey = errors.New("invalid object key")

const maxKeyLen = 1024

// ValidateKey checks the key grammar every backend shares: slash-separated,
// non-empty segments, no "." or ".." segments, no backslashes, no leading or
// trailing slash, no control characters, valid UTF-8, at most 1024 bytes,
// and no segment starting with ".director-put-" (the file store's
// temporary names).
// Keys therefore map one to one onto files and onto S3 and Supabase paths,
// and none of them is silently rewritten (storage-go collapses "//").
func ValidateKey(key string) error {
	if key == "" {
		return badKey(key, "empty key")
	}
	if strings.HasPrefix(key, "/") {
		return badKey(key, "absolute key")
	}
	if strings.HasSuffix(key, "/") {
		return badKey(key, "trailing slash")
	}
	return checkSegments(key, false)
}

// validatePrefix checks a List prefix: like a key, but it may be empty or
// end with a slash, and its last segment may be partial.
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if strings.HasPrefix(prefix, "/") {
		return badKey(prefix, "absolute prefix")
	}
	return checkSegments(strings.TrimSuffix(prefix, "/"), true)
}

func checkSegments(key string, prefix bool) error {
	if len(key) > maxKeyLen {
		return badKey(key, "longer than %d bytes", maxKeyLen)
	}
	if !utf8.ValidString(key) {
		return badKey(key, "not UTF-8")
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return badKey(key, "control character")
		}
		if r == '\\' {
			return badKey(key, "backslash")
		}
	}
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		if strings.HasPrefix(seg, tempPrefix) {
			return badKey(key, "names starting with %q are reserved for uploads in progress", tempPrefix)
		}
		switch seg {
		case "":
			return badKey(key, "empty path segment")
		case ".", "..":
			if prefix && i == len(segs)-1 && seg == "." {
				continue // a partial name such as ".director-check" starts with "."
			}
			return badKey(key, "%q segment", seg)
		}
	}
	return nil
}

func badKey(key, format string, args ...any) error {
	return errcode.Hinted(ErrInvalidKey, errcode.InvalidInput,
		"object keys are slash-separated names without empty, \".\" or \"..\" segments and without backslashes",
		"bad object key %q: %s", key, fmt.Sprintf(format, args...))
}

// checkNewKey validates key and refuses one that already names an object,
// before a remote Put sends any data.
func checkNewKey(ctx context.Context, s Store, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if _, err := s.Stat(ctx, key); err == nil {
		return exists(s, key)
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}
