package workflows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"director/catalog"
	"director/errcode"
	"director/internal/shellquote"
	"director/profiles"
	"director/session"
)

// runLockWait is how long a run waits for its profile's lock. Not zero: a
// `director profile list` holds every lock for an instant to tell which
// profiles are in use, and a run starting at that instant must not fail. Not
// long: a run that finds another run, snapshot or restore on its profile
// fails fast with profile_in_use instead of queueing behind it.
const runLockWait = time.Second

// Run statuses, the strings of `director run --json`.
const (
	StatusOK            = "ok"
	StatusFailed        = "failed"
	StatusHumanRequired = "human_required"
	StatusDomainBlocked = "domain_blocked"
)

// LaunchOptions is what the runner asks of a browser launch.
type LaunchOptions struct {
	UserDataDir string // the profile directory (a temp dir for incognito runs)
	Headless    bool
	Width       int
	Height      int
	// HostResolverRules make Chrome refuse to resolve the hosts the
	// workflow's domain policy refuses (session.Policy.ResolverRules).
	HostResolverRules []string
}

// Launcher starts a browser. cmd/director wires it to the launcher package
// (with --chrome and --cdp-url); tests may pass their own.
type Launcher func(ctx context.Context, o LaunchOptions) (session.Browser, error)

// Runner runs workflows. Its zero value is not usable: set Launch, and
// Profiles for runs on a profile.
type Runner struct {
	Profiles *profiles.Manager // profile lock, restore and snapshot; may be nil for incognito runs
	Catalog  *catalog.DB       // runs, sessions and audit events; nil records nothing
	Launch   Launcher
	// Headless overrides the workflow's browser.headless when set
	// (--headless / --headed); both unset means headless.
	Headless *bool
	// ArtifactsDir receives screenshots; "" means a fresh directory under
	// the system temp dir, reported in the result.
	ArtifactsDir string
	// KeepEvents bounds the audit log after each run (0 means
	// catalog.DefaultKeepEvents; negative disables trimming).
	KeepEvents int
	// TempDir holds incognito profiles ("" = os.TempDir()).
	TempDir string
	// RemoteBrowser says the run attaches to a browser that keeps its own
	// profile (director run --cdp-url), so a lost login is fixed there.
	RemoteBrowser bool
	// ForceRestore restores a snapshot written by a newer Chrome than the
	// one that will open it (director run --force).
	ForceRestore bool
	Log          *slog.Logger
	// Progress, when set, is told about each stage and step as it starts and ends.
	Progress func(ProgressEvent)
}

// ProgressEvent reports one stage of a run.
type ProgressEvent struct {
	Stage    string // restore, launch, step, login_check, snapshot, close
	Step     *Step  // for stage step
	Total    int    // number of steps
	Done     bool   // false when the stage starts
	Attempt  int    // 1-based, for steps with retries
	Duration time.Duration
	Err      error
	Detail   string
}

// StepResult is the outcome of one step.
type StepResult struct {
	Index      int          `json:"index"`
	Name       string       `json:"name"`
	Kind       string       `json:"kind"`
	Line       int          `json:"line"`
	Status     string       `json:"status"` // ok, failed, skipped
	Attempts   int          `json:"attempts"`
	DurationMS int64        `json:"duration_ms"`
	Code       errcode.Code `json:"code,omitempty"`
	SnapshotID string       `json:"snapshot_id,omitempty"` // a mid-run snapshot step
}

// FailedStep names the step that ended a run and why.
type FailedStep struct {
	Index   int          `json:"index"`
	Name    string       `json:"name"`
	Kind    string       `json:"kind"`
	Line    int          `json:"line"`
	Code    errcode.Code `json:"code"`
	Message string       `json:"message"`
}

// ErrorInfo is the error of a failed run.
type ErrorInfo struct {
	Code    errcode.Code `json:"code"`
	Message string       `json:"message"`
	Hint    string       `json:"hint,omitempty"`
}

// Durations are the milliseconds spent in each stage.
type Durations struct {
	TotalMS       int64 `json:"total_ms"`
	RestoreMS     int64 `json:"restore_ms"`
	LaunchMS      int64 `json:"launch_ms"`
	FirstActionMS int64 `json:"launch_to_first_action_ms"` // from the launch until the first step is done
	StepsMS       int64 `json:"steps_ms"`
	LoginCheckMS  int64 `json:"login_check_ms"`
	CloseMS       int64 `json:"close_ms"`
	SnapshotMS    int64 `json:"snapshot_ms"`
}

// Result is the outcome of a run: the one JSON object of `director run --json`.
type Result struct {
	Status          string         `json:"status"`
	Workflow        string         `json:"workflow"`
	File            string         `json:"file"`
	Profile         string         `json:"profile,omitempty"`
	RunID           string         `json:"run_id,omitempty"`
	SessionID       string         `json:"session_id,omitempty"`
	EndReason       string         `json:"end_reason,omitempty"`
	RestoredID      string         `json:"restored_snapshot_id,omitempty"`
	KeptLocal       string         `json:"kept_local,omitempty"` // why restore: latest kept the local profile (a login no snapshot has)
	SnapshotID      string         `json:"snapshot_id,omitempty"`
	SnapshotSkipped string         `json:"snapshot_skipped,omitempty"`
	LoginCheck      string         `json:"login_check,omitempty"` // passed, failed, not_run, none
	FailedStep      *FailedStep    `json:"failed_step,omitempty"`
	Error           *ErrorInfo     `json:"error,omitempty"`
	Outputs         map[string]any `json:"outputs"`
	Artifacts       []string       `json:"artifacts"`
	ArtifactsDir    string         `json:"artifacts_dir,omitempty"`
	Steps           []StepResult   `json:"steps"`
	Durations       Durations      `json:"durations"`
}

// StatusFor maps a run error to its status.
func StatusFor(err error) string {
	switch errcode.Of(err) {
	case "":
		return StatusOK
	case errcode.HumanRequired:
		return StatusHumanRequired
	case errcode.DomainBlocked:
		return StatusDomainBlocked
	}
	return StatusFailed
}

func (r *Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return r.Log
}

// progress reports ev, with w's values from the environment redacted from
// what a progress line may print (Workflow.Redact): the step's name, the
// detail and the error.
func (r *Runner) progress(w *Workflow, ev ProgressEvent) {
	if r.Progress == nil {
		return
	}
	if ev.Step != nil && w.Redact(ev.Step.Name) != ev.Step.Name {
		st := *ev.Step
		st.Name = w.Redact(st.Name)
		ev.Step = &st
	}
	ev.Detail = w.Redact(ev.Detail)
	if ev.Err != nil {
		ev.Err = redactErr(w, ev.Err)
	}
	r.Progress(ev)
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// retryable says whether a step that failed with code may succeed on a
// second attempt.
func retryable(code errcode.Code) bool {
	switch code {
	case errcode.ElementNotFound, errcode.ElementStale, errcode.Timeout:
		return true
	}
	return false
}

// Run runs w: lock the profile for the whole run (fail fast), restore,
// launch, run the steps, check the login, close gracefully and snapshot per
// policy. The Result is always filled in; the error is nil exactly when the
// status is ok, and carries the code that decides the exit status.
func (r *Runner) Run(ctx context.Context, w *Workflow) (*Result, error) {
	start := time.Now()
	res := newResult(w)
	err := r.run(ctx, w, res)
	return res, res.finish(w, err, start)
}

// Refused is the Result of a run of w that failed with err before it
// began: nothing locked, restored, launched or recorded (no run id). The
// caller checked what Run would have failed on (director run on a home
// without a catalog yet, which it does not create for a run bound to
// fail); the Result and the error are those Run gives for that failure.
func Refused(w *Workflow, err error) (*Result, error) {
	res := newResult(w)
	return res, res.finish(w, err, time.Now())
}

// newResult is the Result of a run of w before it starts.
func newResult(w *Workflow) *Result {
	res := &Result{Workflow: w.Name, File: w.File, Profile: w.Profile, Outputs: map[string]any{}, Artifacts: []string{}, Steps: []StepResult{}, LoginCheck: "none"}
	if w.LoginCheck != nil {
		res.LoginCheck = "not_run"
	}
	return res
}

// finish fills in res for a run of w that started at start and ended with
// err, with the values w took from the environment redacted, and returns
// err so redacted.
func (res *Result) finish(w *Workflow, err error, start time.Time) error {
	res.Durations.TotalMS = ms(time.Since(start))
	res.Status = StatusFor(err)
	if err != nil {
		err = redactErr(w, err)
		res.Error = &ErrorInfo{Code: errcode.Of(err), Message: err.Error(), Hint: errcode.HintOf(err)}
	}
	if res.FailedStep != nil {
		res.FailedStep.Message = w.Redact(res.FailedStep.Message)
		res.FailedStep.Name = w.Redact(res.FailedStep.Name)
	}
	for i := range res.Steps {
		res.Steps[i].Name = w.Redact(res.Steps[i].Name)
	}
	for i := range res.Artifacts {
		res.Artifacts[i] = w.Redact(res.Artifacts[i])
	}
	return err
}

// redactErr returns err with the values w took from the environment
// replaced by their references in its message and hint (Workflow.Redact).
// The code stays; the chain of causes goes, since each of them would print
// the values again.
func redactErr(w *Workflow, err error) error {
	msg, hint := err.Error(), errcode.HintOf(err)
	rmsg, rhint := w.Redact(msg), w.Redact(hint)
	if rmsg == msg && rhint == hint {
		return err
	}
	return &errcode.Error{Code: errcode.Of(err), Msg: rmsg, Hint: rhint}
}

// Preflight fails when the settings would refuse the snapshot a run of w
// takes (a remote store without encryption; recipients that leave out
// this machine's identity, when the run also restores), so that it is
// known before anything is locked, restored, launched or recorded, not
// after the whole run. Run asks it first; a caller that reports a run
// that never started differently from one that failed (director run) asks
// it before Run.
func (r *Runner) Preflight(w *Workflow) error {
	if w.Incognito || r.Profiles == nil || !w.MaySnapshot() || r.RemoteBrowser {
		return nil
	}
	if serr := r.Profiles.SnapshotAllowed(); serr != nil {
		return errcode.Hinted(serr, errcode.Of(serr), errcode.HintOf(serr)+"; or set snapshot: never in "+w.File,
			"%s would snapshot profile %s", w.File, w.Profile)
	}
	if w.Restore != RestoreNone {
		if serr := r.Profiles.RoundTripAllowed(); serr != nil {
			return errcode.Hinted(serr, errcode.Of(serr), errcode.HintOf(serr),
				"%s restores and snapshots profile %s", w.File, w.Profile)
		}
	}
	return nil
}

func (r *Runner) run(ctx context.Context, w *Workflow, res *Result) (err error) {
	if r.Launch == nil {
		return errcode.New(errcode.Internal, "workflows: runner without a launcher").WithHint("this is a bug in director; report it")
	}
	if !w.Incognito && r.Profiles == nil {
		return errcode.New(errcode.Internal, "workflows: runner without a profiles manager").WithHint("this is a bug in director; report it")
	}
	if err := r.Preflight(w); err != nil {
		return err
	}

	// The profile lock is held for the whole run: a second run (or a
	// snapshot, restore or delete) of the same profile fails fast.
	var lock *profiles.Lock
	var userDataDir string
	if w.Incognito {
		base := r.TempDir
		if base == "" {
			base = os.TempDir()
		}
		dir, derr := newIncognitoDir(base, r.log())
		if derr != nil {
			return errcode.Hinted(derr, errcode.Internal, "check that the temp directory is writable", "cannot create the incognito profile directory")
		}
		userDataDir = dir.path
		defer func() {
			if rerr := dir.remove(); rerr != nil {
				r.log().Warn("cannot remove the incognito profile", "dir", dir.path, "err", rerr)
			}
		}()
	} else {
		lock, err = r.Profiles.Lock(ctx, w.Profile, runLockWait)
		if err != nil {
			if errcode.Of(err) == errcode.ProfileInUse {
				err = errcode.Hinted(err, errcode.ProfileInUse,
					fmt.Sprintf("another run, snapshot or restore of %s is under way, or someone is logging in with `director profile open %s`; retry when it ends (cron: schedule refreshes further apart)", w.Profile, w.Profile),
					"cannot run %s", w.Name)
			}
			return err
		}
		defer lock.Unlock()
		userDataDir = r.Profiles.Dir(w.Profile)
		if r.Catalog != nil {
			// With the lock held, no other run of the profile is alive:
			// any still open in the catalog belongs to a killed director.
			ab, aerr := r.Catalog.AbandonRuns(ctx, w.Profile)
			r.logAbandoned("of profile "+w.Profile, ab, aerr)
		}
	}

	// Record the run.
	runID := ""
	if r.Catalog != nil {
		// Any run, incognito ones too (they hold no lock), whose director
		// process on this host is gone was killed: close it before this
		// one is recorded.
		ab, aerr := r.Catalog.CloseDeadRuns(ctx)
		r.logAbandoned("on this host", ab, aerr)
		run, cerr := r.Catalog.StartRun(ctx, catalog.Run{Workflow: w.Name, File: w.File, Profile: w.Profile})
		if cerr != nil {
			r.log().Warn("cannot record the run in the catalog", "err", cerr)
		} else {
			runID = run.ID
			res.RunID = run.ID
		}
		defer func() {
			end := catalog.RunEnd{Status: StatusFor(err), ErrorCode: string(errcode.Of(err)), SnapshotID: res.SnapshotID}
			if ferr := r.Catalog.FinishRun(context.WithoutCancel(ctx), runID, end); ferr != nil && runID != "" {
				r.log().Warn("cannot record the end of the run", "err", ferr)
			}
			if r.KeepEvents >= 0 {
				if _, terr := r.Catalog.TrimEvents(context.WithoutCancel(ctx), r.KeepEvents); terr != nil {
					r.log().Warn("cannot trim the audit log", "err", terr)
				}
			}
		}()
	}

	// Restore.
	if !w.Incognito {
		t0 := time.Now()
		r.progress(w, ProgressEvent{Stage: "restore", Detail: w.Restore})
		rid, rerr := r.restore(ctx, w, lock, res)
		res.Durations.RestoreMS = ms(time.Since(t0))
		r.progress(w, ProgressEvent{Stage: "restore", Done: true, Duration: time.Since(t0), Err: rerr, Detail: rid})
		if rerr != nil {
			return rerr
		}
		res.RestoredID = rid
	}

	// Artifacts.
	artifacts := r.ArtifactsDir
	if artifacts == "" && hasScreenshots(w) {
		dir, aerr := os.MkdirTemp(r.TempDir, "director-artifacts-")
		if aerr != nil {
			return errcode.Hinted(aerr, errcode.Internal, "pass --artifacts DIR", "cannot create an artifacts directory")
		}
		artifacts = dir
	}
	res.ArtifactsDir = artifacts

	// Launch the session.
	headless := true
	if w.Browser.Headless != nil {
		headless = *w.Browser.Headless
	}
	if r.Headless != nil {
		headless = *r.Headless
	}
	policy := session.Policy{Blocklist: w.Session.Blocklist, Allowlist: w.Session.Allowlist}
	lo := LaunchOptions{UserDataDir: userDataDir, Headless: headless, Width: w.Browser.ViewportWidth, Height: w.Browser.ViewportHeight,
		HostResolverRules: policy.ResolverRules()}
	s, err := session.New(session.Options{
		Profile: w.Profile,
		Launch: func(ctx context.Context) (session.Browser, error) {
			return r.Launch(ctx, lo)
		},
		Policy:            policy,
		IdleTimeout:       w.Session.IdleTimeout,
		MaxDuration:       w.Session.MaxDuration,
		ActionTimeout:     w.Browser.Timeout,
		Audit:             r.sink(w),
		Log:               r.log(),
		LoginWallSelector: wallSelector(w),
		LoggedInSelector:  loggedInSelector(w),
	})
	if err != nil {
		return err
	}
	res.SessionID = s.ID()
	if r.Catalog != nil {
		if _, cerr := r.Catalog.StartSession(ctx, catalog.Session{ID: s.ID(), Profile: w.Profile, RunID: runID}); cerr != nil {
			r.log().Warn("cannot record the session", "err", cerr)
		}
	}
	t0 := time.Now()
	r.progress(w, ProgressEvent{Stage: "launch"})
	err = s.Start(ctx)
	launched := time.Now()
	res.Durations.LaunchMS = ms(launched.Sub(t0))
	r.progress(w, ProgressEvent{Stage: "launch", Done: true, Duration: launched.Sub(t0), Err: err})
	if err != nil {
		r.endSession(ctx, s, res)
		return err
	}

	// Steps.
	stepsStart := time.Now()
	err = r.steps(ctx, w, s, lock, artifacts, res, t0)
	res.Durations.StepsMS = ms(time.Since(stepsStart))

	// Login check: after successful steps, and for snapshot: always also
	// after failed ones (when the session still runs), because a snapshot
	// needs a passing check.
	loginOK := false // without a check nothing proves the login (Parse refuses a snapshot then)
	if w.LoginCheck != nil && s.Err() == nil && (err == nil || (w.Snapshot == SnapshotAlways && StatusFor(err) == StatusFailed)) {
		t0 := time.Now()
		r.progress(w, ProgressEvent{Stage: "login_check", Detail: w.LoginCheck.URL})
		_, lerr := s.Do(ctx, loginCheckAction(w, ""))
		lerr = loginCheckMistake(w, lerr)
		res.Durations.LoginCheckMS = ms(time.Since(t0))
		r.progress(w, ProgressEvent{Stage: "login_check", Done: true, Duration: time.Since(t0), Err: lerr})
		if lerr == nil {
			loginOK = true
			res.LoginCheck = "passed"
		} else if ctx.Err() != nil || errors.Is(lerr, session.ErrBrowserExited) {
			// Stopped (Ctrl-C), or the browser died, while it ran: no verdict.
			res.LoginCheck = "not_run"
			if err == nil {
				err = lerr
			}
		} else {
			res.LoginCheck = "failed"
			if errcode.Of(lerr) == errcode.HumanRequired {
				lerr = r.humanRequired(w, res, lerr)
			}
			if err == nil {
				err = lerr
			}
		}
	}
	if err == nil {
		err = s.Err()
	}
	if errors.Is(ctx.Err(), context.Canceled) && (err == nil || errors.Is(err, context.Canceled)) && errcode.Of(err) != errcode.Interrupted {
		cause := err
		if cause == nil {
			cause = ctx.Err()
		}
		err = errcode.Hinted(cause, errcode.Interrupted, "the run was stopped (Ctrl-C or SIGTERM); no snapshot was taken; run it again when ready", "interrupted")
	}
	if errcode.Of(err) == errcode.HumanRequired && res.LoginCheck != "failed" {
		err = r.humanRequired(w, res, err)
	}

	// Close gracefully: Chrome writes cookies and storage only then.
	t0 = time.Now()
	r.progress(w, ProgressEvent{Stage: "close"})
	reason := session.ReasonFor(err)
	if ctx.Err() != nil {
		reason = session.EndUserStopped
	}
	closeErr := s.CloseFor(context.WithoutCancel(ctx), reason, err)
	r.endSession(ctx, s, res)
	res.Durations.CloseMS = ms(time.Since(t0))
	r.progress(w, ProgressEvent{Stage: "close", Done: true, Duration: time.Since(t0), Detail: res.EndReason})

	// Snapshot per policy; never after a logged-out or blocked run, so a
	// bad refresh never replaces the latest good snapshot.
	res.SnapshotSkipped = snapshotSkip(w, err, loginOK, res.LoginCheck)
	if res.SnapshotSkipped == "" && closeErr != nil {
		// Chrome was killed at the close: the proven login may not be on
		// disk, so neither a snapshot nor the unsaved mark trusts it.
		res.SnapshotSkipped = "Chrome was killed at the close, so the profile may lack its last writes"
		if err == nil {
			err = closeErr
		}
	}
	if res.SnapshotSkipped == "" && ctx.Err() == nil {
		if res.LoginCheck == "passed" {
			// The profile holds a login the check just proved, newer than
			// any snapshot (a site may have rotated its tokens): until the
			// snapshot holds it, the next restore: latest must not bring the
			// older snapshot back over it. Recorded before the snapshot,
			// which clears it, so that a snapshot that fails, or that a
			// second Ctrl-C cuts short by quitting at once, leaves it.
			if merr := r.Profiles.MarkUnsaved(context.WithoutCancel(ctx), w.Profile); merr != nil {
				r.log().Warn("cannot record that the profile has an unsaved login", "profile", w.Profile, "err", merr)
			}
		}
		t0 := time.Now()
		r.progress(w, ProgressEvent{Stage: "snapshot"})
		snap, serr := r.Profiles.Snapshot(ctx, w.Profile, profiles.SnapshotOptions{Lock: lock, Note: snapshotNote(w, runID)})
		res.Durations.SnapshotMS = ms(time.Since(t0))
		r.progress(w, ProgressEvent{Stage: "snapshot", Done: true, Duration: time.Since(t0), Err: serr})
		if serr != nil {
			if err == nil {
				err = errcode.Hinted(serr, errcode.Of(serr), errcode.HintOf(serr), "the workflow succeeded but its snapshot failed")
			}
		} else {
			res.SnapshotID = snap.ID
		}
	}
	return err
}

func snapshotNote(w *Workflow, runID string) string {
	if runID == "" {
		return "workflow " + w.Name
	}
	return "workflow " + w.Name + " (run " + runID + ")"
}

// snapshotSkip says why no snapshot is taken after a run, "" to take one.
// check is the result's login_check: passed, failed, not_run or none.
func snapshotSkip(w *Workflow, err error, loginOK bool, check string) string {
	switch {
	case w.Incognito:
		return "incognito run"
	case w.Snapshot == SnapshotNever:
		return "snapshot: never"
	case w.LoginCheck == nil:
		return "no login_check proves the login"
	case errors.Is(err, session.ErrBrowserExited):
		return "the browser exited unexpectedly"
	case errcode.Of(err) == errcode.Interrupted || errors.Is(err, context.Canceled):
		// Whatever had failed or not run by then: it was stopped.
		return "run interrupted"
	case errcode.Of(err) == errcode.HumanRequired && check == "failed":
		return "human required: the login check found the profile logged out"
	case errcode.Of(err) == errcode.HumanRequired:
		return "human required: a step met a login wall or a CAPTCHA"
	case errcode.Of(err) == errcode.DomainBlocked:
		return "run stopped at a blocked domain"
	case !loginOK && check == "not_run" && err != nil:
		return "a step failed, so the login check did not run"
	case !loginOK:
		return "login check did not pass"
	case err != nil && w.Snapshot == SnapshotOnSuccess:
		return "run failed"
	}
	return ""
}

func hasScreenshots(w *Workflow) bool {
	for _, s := range w.Steps {
		if s.Kind == StepScreenshot {
			return true
		}
	}
	return false
}

// humanRequired gives a human_required error the exact command to log in again.
// res says whether the profile has a snapshot to keep: a first run, before
// any login was snapshotted, must not speak of one.
func (r *Runner) humanRequired(w *Workflow, res *Result, err error) error {
	if w.Incognito {
		return errcode.Hinted(err, errcode.HumanRequired, "an incognito run (profile: null) cannot keep a login; run the workflow on a profile", "%s needs a human", w.Name)
	}
	if r.RemoteBrowser {
		return errcode.Hinted(err, errcode.HumanRequired,
			"log in again by hand in the remote browser given by --cdp-url: it keeps its own profile, which director neither restores nor snapshots",
			"the remote browser needs a human (workflow %s)", w.Name)
	}
	cmd := "director profile open " + w.Profile // in backticks below
	if w.LoginCheck != nil {
		cmd += " --url " + shellquote.Quote(w.LoginCheck.URL)
	}
	cmd += " --snapshot"
	kept := "the latest good snapshot is kept"
	if res != nil && w.Restore == RestoreLatest && res.RestoredID == "" && res.KeptLocal == "" {
		kept = "it has no snapshot yet"
	}
	return errcode.Hinted(err, errcode.HumanRequired,
		"log in again by hand, which also takes a fresh snapshot: `"+cmd+"`",
		"profile %s needs a human (%s)", w.Profile, kept)
}

// restore brings the profile to the state the workflow asks for and
// returns the restored snapshot id ("" when none). restore: latest keeps a
// local profile that holds a login no snapshot has, newer than the latest
// snapshot (`director profile open` without --snapshot, or a run whose login
// check passed and whose snapshot failed), and says so in res.KeptLocal:
// restoring would lose that login.
func (r *Runner) restore(ctx context.Context, w *Workflow, lock *profiles.Lock, res *Result) (string, error) {
	exists, err := r.Profiles.Exists(w.Profile)
	if err != nil {
		return "", err
	}
	if w.Restore == RestoreNone {
		if !exists {
			return "", r.Profiles.Create(ctx, w.Profile)
		}
		return "", nil
	}
	rr, err := r.Profiles.Restore(ctx, w.Profile, w.Restore, profiles.RestoreOptions{
		Lock: lock, Force: r.ForceRestore, KeepUnsaved: w.Restore == RestoreLatest})
	if err == nil {
		if rr.KeptLocal {
			res.KeptLocal = fmt.Sprintf("not restored: the local profile has a login no snapshot has (from director profile open, or a run whose snapshot failed, at %s), newer than the latest snapshot %s",
				rr.UnsavedSince.UTC().Format(time.RFC3339), rr.Skipped)
		}
		return rr.ID, nil
	}
	if errcode.Of(err) == errcode.SnapshotNotFound && w.Restore == RestoreLatest {
		// No snapshot yet: run on the local profile (a first login).
		if exists {
			r.log().Info("no snapshot to restore; using the local profile", "profile", w.Profile)
			return "", nil
		}
		r.log().Info("no snapshot and no local profile; creating it", "profile", w.Profile)
		return "", r.Profiles.Create(ctx, w.Profile)
	}
	return "", err
}

func (r *Runner) endSession(ctx context.Context, s *session.Session, res *Result) {
	<-s.Done()
	res.EndReason = string(s.EndReason())
	if r.Catalog == nil {
		return
	}
	in := s.Info()
	if err := r.Catalog.EndSession(context.WithoutCancel(ctx), s.ID(), catalog.SessionEnd{Reason: res.EndReason, ActionCount: int64(in.ActionCount)}); err != nil {
		r.log().Warn("cannot record the end of the session", "err", err)
	}
}

// steps runs the workflow's steps in order and stops at the first failure.
func (r *Runner) steps(ctx context.Context, w *Workflow, s *session.Session, lock *profiles.Lock, artifacts string, res *Result, launchStart time.Time) error {
	total := len(w.Steps)
	for i := range w.Steps {
		st := &w.Steps[i]
		sr := StepResult{Index: st.Index, Name: st.Label(), Kind: st.Kind, Line: st.Line, Status: "ok"}
		t0 := time.Now()
		var err error
		for attempt := 1; attempt <= st.Retries+1; attempt++ {
			sr.Attempts = attempt
			r.progress(w, ProgressEvent{Stage: "step", Step: st, Total: total, Attempt: attempt})
			ta := time.Now()
			err = r.step(ctx, w, s, st, lock, artifacts, res, &sr)
			r.progress(w, ProgressEvent{Stage: "step", Step: st, Total: total, Attempt: attempt, Done: true, Duration: time.Since(ta), Err: err})
			if err == nil || !retryable(errcode.Of(err)) || s.Err() != nil || ctx.Err() != nil || attempt > st.Retries {
				break
			}
			select {
			case <-time.After(time.Duration(attempt) * 250 * time.Millisecond):
			case <-ctx.Done():
			}
		}
		if i == 0 {
			res.Durations.FirstActionMS = ms(time.Since(launchStart))
		}
		if err == nil {
			// A click or a script may have started a navigation that the
			// blocklist stopped after the action returned.
			err = s.Err()
		}
		sr.DurationMS = ms(time.Since(t0))
		if err != nil {
			sr.Status = "failed"
			sr.Code = errcode.Of(err)
			res.Steps = append(res.Steps, sr)
			res.FailedStep = &FailedStep{Index: st.Index, Name: st.Label(), Kind: st.Kind, Line: st.Line, Code: errcode.Of(err), Message: err.Error()}
			for _, rest := range w.Steps[i+1:] {
				res.Steps = append(res.Steps, StepResult{Index: rest.Index, Name: rest.Label(), Kind: rest.Kind, Line: rest.Line, Status: "skipped"})
			}
			return errcode.Hinted(err, errcode.Of(err), errcode.HintOf(err), "%s:%d: step %d (%s)", w.File, st.Line, st.Index+1, st.Label())
		}
		res.Steps = append(res.Steps, sr)
	}
	return nil
}

// MaySnapshot says whether a run of w may snapshot its profile: by its
// snapshot policy or by a snapshot step.
func (w *Workflow) MaySnapshot() bool {
	if w.Incognito {
		return false
	}
	if w.Snapshot != SnapshotNever {
		return true
	}
	return slices.ContainsFunc(w.Steps, func(st Step) bool { return st.Kind == StepSnapshot })
}

// wallSelector is the workflow's login wall selector, "" when it has none.
func wallSelector(w *Workflow) string {
	if w.LoginCheck == nil {
		return ""
	}
	return w.LoginCheck.LoginWallSelector
}

// loggedInSelector is the workflow's logged-in selector, "" when it has none.
func loggedInSelector(w *Workflow) string {
	if w.LoginCheck == nil {
		return ""
	}
	return w.LoginCheck.LoggedInSelector
}

// loginCheckAction is the workflow's login check as a session action on tab
// ("" for the current one).
func loginCheckAction(w *Workflow, tab string) session.Action {
	return session.Action{Type: session.ActLoginCheck, Tab: tab, URL: w.LoginCheck.URL,
		LoggedInSelector: w.LoginCheck.LoggedInSelector, LoginWallSelector: w.LoginCheck.LoginWallSelector}
}

// proveLogin runs the workflow's login check, if it has one, in a tab of its
// own, so that the steps' tabs keep their pages, then closes that tab and
// makes the previous tab current again.
func (r *Runner) proveLogin(ctx context.Context, w *Workflow, s *session.Session) error {
	if w.LoginCheck == nil { // Parse refuses such a step
		return errcode.New(errcode.InvalidAction, "a snapshot step needs a login_check to prove the login first").
			WithHint("add a login_check to %s, or remove the snapshot step", w.File)
	}
	prev := ""
	for _, t := range s.Info().Tabs {
		if t.Current {
			prev = t.Handle
		}
	}
	out, err := s.Do(ctx, session.Action{Type: session.ActOpenTab, URL: "about:blank"})
	if err != nil {
		return err
	}
	_, err = s.Do(ctx, loginCheckAction(w, out.Tab))
	if err != nil {
		return err // the session is paused for a human, or over: no clean-up to do
	}
	if _, err := s.Do(ctx, session.Action{Type: session.ActCloseTab, Tab: out.Tab}); err != nil {
		return err
	}
	if prev != "" {
		if _, err := s.Do(ctx, session.Action{Type: session.ActSwitchTab, Tab: prev}); err != nil {
			return err
		}
	}
	return nil
}

// step runs one attempt of one step.
func (r *Runner) step(ctx context.Context, w *Workflow, s *session.Session, st *Step, lock *profiles.Lock, artifacts string, res *Result, sr *StepResult) error {
	if st.Kind == StepSnapshot {
		// Only a proven login is snapshotted, mid-run as at the end: the
		// snapshot becomes the profile's latest at once, and a logged-out
		// one would replace the latest good snapshot.
		// (Run turns a human_required error into the command that logs in again.)
		if err := r.proveLogin(ctx, w, s); err != nil {
			return errcode.Hinted(err, errcode.Of(err), errcode.HintOf(err), "no snapshot: the login check before it did not pass")
		}
		var id string
		err := s.Restart(ctx, func(ctx context.Context) error {
			snap, err := r.Profiles.Snapshot(ctx, w.Profile, profiles.SnapshotOptions{Lock: lock, Note: nonEmpty(st.Note, "mid-run snapshot of "+w.Name)})
			if err != nil {
				return err
			}
			id = snap.ID
			return nil
		})
		sr.SnapshotID = id
		return err
	}
	a := session.Action{Timeout: st.Timeout, URL: st.URL, Selector: st.Selector, Text: st.Text, Clear: st.Clear,
		Key: st.Key, Value: st.Value, Extract: st.Extract, Attribute: st.Attribute, Expression: st.Expression,
		FullPage: st.FullPage, State: st.State, Duration: st.Duration, Tab: st.Tab}
	a.Type = session.ActionType(st.Kind)
	if st.Kind == StepScreenshot {
		a.Dir, a.File = artifacts, st.File
	}
	out, err := s.Do(ctx, a)
	if err != nil {
		return err
	}
	if st.As != "" {
		res.Outputs[st.As] = out.Value
	}
	if out.File != "" {
		res.Artifacts = append(res.Artifacts, out.File)
	}
	return nil
}

func nonEmpty(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// sink records session events in the catalog.
func (r *Runner) sink(w *Workflow) session.AuditSink {
	if r.Catalog == nil {
		return nil
	}
	cat := CatalogSink(r.Catalog)
	// An event's detail names selectors and URLs, which may hold a value
	// from the environment: the audit log keeps its reference, as messages do.
	return session.AuditFunc(func(ctx context.Context, e session.Event) error {
		e.Detail, e.Domain = w.Redact(e.Detail), w.Redact(e.Domain)
		return cat.Record(ctx, e)
	})
}

// CatalogSink is an AuditSink that writes events to the catalog's audit log.
func CatalogSink(db *catalog.DB) session.AuditSink {
	return session.AuditFunc(func(ctx context.Context, e session.Event) error {
		detail := e.Detail
		if e.Kind == session.EventSessionEnd {
			detail = fmt.Sprintf("reason=%s actions=%d", e.Reason, e.ActionCount)
		}
		code := string(e.Code)
		if code == "" {
			code = "ok"
		}
		return db.AddEvent(ctx, catalog.Event{At: e.At, SessionID: e.SessionID, Profile: e.Profile, Kind: e.Kind,
			Action: e.Action, Tab: e.Tab, Domain: e.Domain, DurationMS: e.Duration.Milliseconds(), ResultCode: code, Detail: detail})
	})
}

// logAbandoned logs what AbandonRuns or CloseDeadRuns closed (where says
// whose runs), or that it failed: the run goes on either way.
func (r *Runner) logAbandoned(where string, a catalog.Abandoned, err error) {
	if err != nil {
		r.log().Warn("cannot close the runs "+where+" that a killed director left open", "err", err)
	} else if len(a.Runs)+len(a.Sessions) > 0 {
		r.log().Info("closed the runs "+where+" that a killed director left open", "runs", a.Runs, "sessions", a.Sessions)
	}
}
