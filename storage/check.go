package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"director/errcode"
)

// CheckPrefix is where Check puts its probe objects.
const CheckPrefix = ".director-check/"

// Step is one timed call of a Check.
type Step struct {
	Name       string        `json:"name"` // put, stat, list, get, delete
	OK         bool          `json:"ok"`
	Skipped    bool          `json:"skipped,omitempty"`
	Duration   time.Duration `json:"-"`
	DurationMS float64       `json:"duration_ms"`
	Code       errcode.Code  `json:"code,omitempty"`
	Error      string        `json:"error,omitempty"`
}

// Report is the outcome of Check: every step, and for a failure the
// problem, a one-line diagnosis and what to do.
type Report struct {
	Store     string  `json:"store"`
	OK        bool    `json:"ok"`
	Steps     []Step  `json:"steps"`
	Problem   Problem `json:"problem,omitempty"`
	Diagnosis string  `json:"diagnosis,omitempty"`
	Hint      string  `json:"hint,omitempty"`
	// CreatedBucket names the bucket the check's upload created because it
	// did not exist (a Supabase store creates its bucket on the first
	// upload); a misspelt name shows here rather than passing unnoticed.
	CreatedBucket string `json:"created_bucket,omitempty"`

	err        error
	failedStep string
}

// Err is nil for a passing report, else a storage_unavailable error
// carrying the diagnosis and hint.
func (r Report) Err() error {
	if r.OK {
		return nil
	}
	return errcode.Hinted(r.err, errcode.StorageUnavailable, r.Hint, "store check of %s failed at %s: %s", r.Store, r.failedStep, r.Diagnosis)
}

// Check runs a put / stat / list / get / delete round trip of a small probe
// object under CheckPrefix, timing each step. After a failed put the
// other steps are skipped; after a successful one the probe is always
// deleted. The first failure is diagnosed: bad credentials, missing bucket,
// unreachable endpoint, clock skew, or a failing server.
func Check(ctx context.Context, s Store) Report {
	rep := Report{Store: s.String(), OK: true}
	key := CheckPrefix + time.Now().UTC().Format("20060102T150405Z") + "-" + randomHex(4)
	probe := []byte("director store check " + key + "\n")

	step := func(name string, fn func() error) bool {
		start := time.Now()
		err := fn()
		st := Step{Name: name, OK: err == nil, Duration: time.Since(start)}
		st.DurationMS = float64(st.Duration.Microseconds()) / 1000
		if err != nil {
			st.Code, st.Error = errcode.Of(err), err.Error()
			if rep.OK {
				rep.OK = false
				rep.err, rep.failedStep = err, name
				rep.Problem, rep.Diagnosis, rep.Hint = diagnose(err)
			}
		}
		rep.Steps = append(rep.Steps, st)
		return err == nil
	}
	skip := func(names ...string) {
		for _, n := range names {
			rep.Steps = append(rep.Steps, Step{Name: n, Skipped: true})
		}
	}

	ok := step("put", func() error { return s.Put(ctx, key, bytes.NewReader(probe), int64(len(probe))) })
	if bc, is := s.(interface{ CreatedBucket() string }); is {
		rep.CreatedBucket = bc.CreatedBucket()
	}
	if !ok {
		skip("stat", "list", "get", "delete")
		return rep
	}
	step("stat", func() error {
		o, err := s.Stat(ctx, key)
		if err == nil && o.Size != int64(len(probe)) {
			err = checkMismatch("stat reports %d bytes, the probe has %d", o.Size, len(probe))
		}
		return err
	})
	step("list", func() error {
		objs, err := s.List(ctx, CheckPrefix)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.Key == key {
				return nil
			}
		}
		return checkMismatch("the probe %q is missing from the listing of %q", key, CheckPrefix)
	})
	step("get", func() error {
		rc, _, err := s.Get(ctx, key)
		if err != nil {
			return err
		}
		defer rc.Close()
		got, err := io.ReadAll(io.LimitReader(rc, int64(len(probe))+1))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, probe) {
			return checkMismatch("read back %d bytes that differ from the probe", len(got))
		}
		return nil
	})
	step("delete", func() error {
		// Even when the caller's context has ended, try to leave no probe.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := s.Delete(dctx, key); err != nil {
			return err
		}
		if _, err := s.Stat(dctx, key); !errors.Is(err, ErrNotFound) {
			if err == nil {
				return checkMismatch("the probe is still there after delete")
			}
			return err
		}
		return nil
	})
	return rep
}

var errMismatch = errors.New("store returned inconsistent data")

func checkMismatch(format string, args ...any) error {
	return errcode.Hinted(&storeError{problem: ProblemServer, err: errMismatch}, errcode.StorageUnavailable,
		"the store does not behave like an object store; check the endpoint and any proxy in front of it",
		format, args...)
}

// diagnose explains the first failure of a check.
func diagnose(err error) (Problem, string, string) {
	p := ProblemOf(err)
	hint := errcode.HintOf(err)
	var d string
	switch p {
	case ProblemCredentials:
		d = "bad credentials: the store rejected the access key or its signature"
	case ProblemNoBucket:
		d = "missing bucket: the bucket named in the store URL does not exist"
	case ProblemUnreachable:
		d = "unreachable endpoint: connection refused, DNS failure or TLS mismatch"
	case ProblemClockSkew:
		d = "clock skew: the store rejects this machine's time"
	case ProblemRegion:
		d = "wrong region: the store URL's region is not the bucket's"
	case ProblemServer:
		d = "the store is failing (server errors or inconsistent answers)"
	case ProblemLocal:
		d = "the store's local folder cannot be created, read or written (a local file system error)"
	case ProblemTimeout:
		d = "the store did not answer in time"
	case ProblemExists:
		d = "the probe key already existed, which should never happen"
	default:
		d = "unexpected error"
	}
	if hint == "" {
		hint = problemHint(p)
	}
	if strings.Contains(hint, "store check`") {
		// This is the store check: it would only say the same again.
		hint = "check the store URL, the credentials and the server's logs; --log-level debug shows each request"
	}
	return p, d, hint
}
