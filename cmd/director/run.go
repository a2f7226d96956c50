package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"director/catalog"
	"director/errcode"
	"director/internal/progress"
	"director/launcher"
	"director/profiles"
	"director/workflows"
)

// varsFlag collects repeated --var k=v without splitting values on commas.
type varsFlag struct{ kv []string }

func (v *varsFlag) Set(s string) error {
	k, _, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("--var wants NAME=VALUE, got %q", s)
	}
	v.kv = append(v.kv, s)
	return nil
}

func (v *varsFlag) String() string { return strings.Join(v.kv, " ") }

func (v *varsFlag) vars() map[string]string {
	m := map[string]string{}
	for _, s := range v.kv {
		k, val, _ := strings.Cut(s, "=")
		m[k] = val
	}
	return m
}

// reportedError is a run failure whose result was already printed as the
// one JSON object of --json: the caller maps it to its exit status and
// prints nothing more.
type reportedError struct{ error }

func (e reportedError) Unwrap() error { return e.error }

// Reported tells run (app.go) that the error is already on stdout.
func (e reportedError) Reported() bool { return true }

// runCommands returns `director run`.
func runCommands() []*cli.Command {
	return []*cli.Command{{
		Name:      "run",
		Usage:     "run a workflow: restore the profile, drive Chrome, check the login, snapshot",
		ArgsUsage: "FILE",
		Description: "Loads and validates the workflow YAML (errors name FILE:LINE and the field), locks the profile\n" +
			"for the whole run (a second run of the same profile fails fast with profile_in_use), restores its\n" +
			"snapshot, launches Chrome, runs the steps with the session's blocklist, idle timeout and max duration,\n" +
			"checks the login, closes Chrome gracefully and snapshots per the workflow's policy — never after a\n" +
			"failed login check, so a logged-out refresh never replaces the latest good snapshot.\n\n" +
			"Exit codes: 0 ok, 1 failure, 2 invalid workflow or arguments, 3 human required (log in again with\n" +
			"`director profile open NAME --snapshot`), 4 domain blocked. See docs/workflows.md.",
		Flags: []cli.Flag{
			&cli.GenericFlag{Name: "var", Value: &varsFlag{}, Usage: "set a workflow variable, `NAME=VALUE` (repeatable; overrides vars:; a NAME the workflow neither declares nor uses is refused)"},
			&cli.StringFlag{Name: "artifacts", Usage: "write screenshots to `DIR`", DefaultText: "a new directory under <home>/artifacts, named in the result"},
			setting(&cli.StringFlag{Name: "cdp-url", EnvVars: []string{"DIRECTOR_CDP_URL"}, Usage: "attach to a running browser at `URL` (ws:// or http://) instead of launching Chrome"}),
			// Neither flag set leaves the choice to the workflow: DefaultText
			// says so, where urfave/cli would print "(default: false)".
			&cli.BoolFlag{Name: "headless", Usage: "run Chrome without a window, whatever the workflow's browser.headless says",
				DefaultText: "the workflow's browser.headless, headless when it has none"},
			&cli.BoolFlag{Name: "headed", Usage: "show the Chrome window (needs a display), whatever the workflow's browser.headless says",
				DefaultText: "the workflow's browser.headless, headless when it has none"},
			&cli.IntFlag{Name: "keep", EnvVars: []string{"DIRECTOR_AUDIT_KEEP"}, Base: 10, Value: catalog.DefaultKeepEvents, Usage: "keep at most `N` audit events after the run (0 keeps all)"},
			&cli.DurationFlag{Name: "close-timeout", EnvVars: []string{"DIRECTOR_CLOSE_TIMEOUT"}, Value: launcher.DefaultCloseTimeout,
				Usage: "wait up to `DURATION` for Chrome to exit after the run before killing it (a Chrome that had to be killed is not snapshotted)"},
			&cli.BoolFlag{Name: "force", Usage: "restore a snapshot written by a newer Chrome than the local one (Chrome may reset parts of a profile it sees as downgraded), or a pinned one older than a login the profile holds that no snapshot has"},
		},
		Action: runWorkflow,
	}}
}

func runWorkflow(c *cli.Context) error {
	g := getGlobals(c)
	ctx := c.Context
	if c.NArg() != 1 {
		return errcode.New(errcode.InvalidInput, "run expects exactly one workflow FILE, got %d arguments", c.NArg()).
			WithHint("usage: director run FILE [--var NAME=VALUE]… [--json] [--artifacts DIR]")
	}
	if c.Bool("headless") && c.Bool("headed") {
		return errcode.New(errcode.InvalidInput, "--headless and --headed exclude each other").WithHint("pass one of them")
	}
	vf, _ := c.Generic("var").(*varsFlag)
	vars := map[string]string{}
	if vf != nil {
		vars = vf.vars()
	}
	closeWait, err := closeTimeout(c)
	if err != nil {
		return err
	}
	if c.Int("keep") < 0 {
		return errcode.New(errcode.InvalidInput, "--keep %d: the number of audit events to keep cannot be negative", c.Int("keep")).
			WithHint("pass 0 to keep every event, or a positive N")
	}
	if err := tildeErr("the workflow FILE", c.Args().First(), ""); err != nil {
		return err
	}
	w, err := workflows.Load(c.Args().First(), workflows.LoadOptions{Vars: vars})
	if err != nil {
		return err
	}
	cdpURL := c.String("cdp-url")
	if cdpURL != "" {
		if err := checkCDPURL(cdpURL); err != nil {
			return err
		}
	}
	artifacts := c.String("artifacts")
	if artifacts != "" {
		if err := tildeErr("--artifacts", artifacts, ""); err != nil {
			return err
		}
		if err := prepareArtifactsDir(artifacts); err != nil {
			return err
		}
	}
	if cdpURL == "" {
		// Before the profile is locked and restored: a Chrome that cannot
		// be found, or a headed one without a display, fails the run now,
		// as browser_launch_failed.
		if _, err := findChrome(c); err != nil {
			return err
		}
		switch {
		case c.Bool("headed"):
			if err := needDisplay(orElse("drop --headed to run Chrome headless")); err != nil {
				return err
			}
		case !c.Bool("headless") && w.Browser.Headless != nil && !*w.Browser.Headless:
			if err := needDisplay(orElse("pass --headless to run Chrome without a window (the workflow says browser.headless: false)")); err != nil {
				return err
			}
		}
	}
	var notes []string
	if cdpURL != "" && !w.Incognito && (w.Restore != workflows.RestoreNone || w.Snapshot != workflows.SnapshotNever) {
		// A remote browser has its own profile: restoring or snapshotting the
		// local directory would not touch it. Said in the result (the text
		// summary, the JSON's notes), not on stderr: a cron job under
		// --quiet would mail it on every run.
		notes = append(notes, fmt.Sprintf("--cdp-url: the remote browser keeps its own profile; not restoring or snapshotting %s", w.Profile))
		g.Log.Info("the remote browser keeps its own profile; not restoring or snapshotting", "profile", w.Profile, "cdp_url", urlForLog(cdpURL))
		w.Restore, w.Snapshot = workflows.RestoreNone, workflows.SnapshotNever
	}

	r := &workflows.Runner{
		Launch:        workflows.ChromeLauncher(workflows.ChromeOptions{ChromePath: c.String("chrome"), CDPURL: cdpURL, Log: g.Log, CloseTimeout: closeWait}),
		ArtifactsDir:  artifacts,
		KeepEvents:    c.Int("keep"),
		ForceRestore:  c.Bool("force"),
		RemoteBrowser: cdpURL != "",
		Log:           g.Log,
	}
	if r.KeepEvents == 0 {
		r.KeepEvents = -1 // keep all
	}
	switch {
	case c.Bool("headless"):
		r.Headless = ptr(true)
	case c.Bool("headed"):
		r.Headless = ptr(false)
	}
	if w.Incognito {
		cat, err := openCatalog(ctx, g)
		if err != nil {
			return err
		}
		defer cat.Close()
		r.Catalog = cat
	} else {
		m, err := newManager(c, runKeys(w))
		if err != nil {
			return err
		}
		// Settings that would refuse the run's snapshot refuse the run
		// before it starts, as a bad --artifacts does: the plain error,
		// not a failed run's result, and before the catalog is created.
		r.Profiles = m
		if err := r.Preflight(w); err != nil {
			if m.Catalog != nil {
				m.Catalog.Close()
			}
			return err
		}
		if m.Catalog == nil && w.Restore != workflows.RestoreNone {
			// A home without a catalog yet: a snapshot the run cannot
			// restore fails it before the home and director.db are
			// created. With restore: latest, none at all is a first run.
			// The run fails as the runner would have: its result, not a
			// plain error (the same --json object as on a home with a
			// catalog, where the runner finds it).
			err := m.CheckRestore(ctx, w.Profile, w.Restore, profiles.RestoreOptions{})
			if err != nil && (errcode.Of(err) != errcode.SnapshotNotFound || w.Restore != workflows.RestoreLatest) {
				res, err := workflows.Refused(w, err)
				return reportRun(g, res, err, notes)
			}
		}
		if m.Catalog == nil {
			if m.Catalog, err = openCatalog(ctx, g); err != nil {
				return err
			}
		}
		defer m.Catalog.Close()
		r.Profiles, r.Catalog = m, m.Catalog
	}
	if artifacts == "" && hasScreenshots(w) {
		// Screenshots of runs without --artifacts go under the home, where
		// a cron user finds them (and the result names the directory), not
		// into an unannounced temp directory. Made once the run is known
		// to start: a run refused above leaves a fresh home as it was.
		if r.ArtifactsDir, err = newArtifactsDir(g, w); err != nil {
			return err
		}
	}
	if f, ok := fileOf(g.Stderr); ok && progress.Enabled(f, g.Quiet, g.JSON) {
		r.Progress = progressPrinter(g.Stderr, len(w.Steps))
	}

	res, err := r.Run(ctx, w)
	return reportRun(g, res, err, notes)
}

// reportRun prints the result of a run, res, which ended with err, as text
// or JSON, and returns err for the exit status.
func reportRun(g *globals, res *workflows.Result, err error, notes []string) error {
	if res != nil && res.Error != nil {
		if strings.TrimSpace(res.Error.Hint) == "" {
			// As for every other command's error (hintFor): a run
			// stopped during its restore or snapshot had none.
			res.Error.Hint = defaultHints[res.Error.Code]
		}
		res.Error.Hint = g.hints.hint(res.Error.Hint)
	}
	out := runOutput{Result: res, Notes: notes}
	if g.JSON {
		writeJSON(g.Stdout, out)
		if err != nil {
			return reportedError{err}
		}
		return nil
	}
	if !g.Quiet {
		printResult(g.Stdout, out)
	}
	return err
}

// runOutput is the result of `director run`: the runner's Result and what
// the command itself has to say about the run.
type runOutput struct {
	*workflows.Result
	// Notes are facts about the run a reader should know, such as a
	// --cdp-url run not restoring or snapshotting the profile.
	Notes []string `json:"notes,omitempty"`
}

func ptr[T any](v T) *T { return &v }

// runKeys are the keys a run of w uses: the identity when it restores a
// snapshot, the recipients when it may snapshot (by its policy or a step).
func runKeys(w *workflows.Workflow) keyUse {
	keys := noKeys
	if w.Restore != workflows.RestoreNone {
		keys |= useIdentity
	}
	if w.MaySnapshot() {
		keys |= useRecipients
	}
	return keys
}

func hasScreenshots(w *workflows.Workflow) bool {
	for _, st := range w.Steps {
		if st.Kind == workflows.StepScreenshot {
			return true
		}
	}
	return false
}

// newArtifactsDir makes the screenshots directory of a run without
// --artifacts: <home>/artifacts/<UTC time>-<workflow name>-<random>.
func newArtifactsDir(g *globals, w *workflows.Workflow) (string, error) {
	root := filepath.Join(g.Home, "artifacts")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", errcode.Hinted(err, errcode.Internal, "check that --home / DIRECTOR_HOME is writable, or pass --artifacts DIR", "cannot create %s", root)
	}
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return '-'
	}, w.Name)
	if len(slug) > 40 {
		slug = slug[:40]
	}
	dir, err := os.MkdirTemp(root, time.Now().UTC().Format("20060102T150405Z")+"-"+slug+"-")
	if err != nil {
		return "", errcode.Hinted(err, errcode.Internal, "check that "+root+" is writable, or pass --artifacts DIR", "cannot create an artifacts directory")
	}
	return dir, nil
}

// cdpURLHint shows the forms --cdp-url takes.
const cdpURLHint = "give the browser's DevTools address, such as http://127.0.0.1:9222 (Chrome started with --remote-debugging-port=9222) or ws://127.0.0.1:9222/devtools/browser/ID"

// checkCDPURL refuses a --cdp-url that cannot be a DevTools address, before
// anything is restored or attached.
func checkCDPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return errcode.New(errcode.InvalidInput, "--cdp-url %s is not a URL with a host", urlForLog(s)).WithHint("%s", cdpURLHint)
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
		return nil
	}
	return errcode.New(errcode.InvalidInput, "--cdp-url %s: the scheme must be http, https, ws or wss", urlForLog(s)).WithHint("%s", cdpURLHint)
}

// urlForLog is a URL as director may print or log it: a hosted browser's
// DevTools address can carry a token in its query or user part, so those
// are shown as "…"; a URL that does not parse is not shown at all.
func urlForLog(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a URL that does not parse)"
	}
	out := ""
	if u.Scheme != "" {
		out = u.Scheme + ":"
	}
	if u.Host != "" || u.User != nil {
		out += "//"
		if u.User != nil {
			out += "…@"
		}
		out += u.Host
	}
	out += u.EscapedPath()
	if u.Opaque != "" {
		out += "…"
	}
	if u.RawQuery != "" || u.ForceQuery {
		out += "?…"
	}
	return strconv.Quote(out)
}

// prepareArtifactsDir makes sure --artifacts names a directory director can
// write screenshots to, creating it when missing, so that a bad one fails
// the run before the profile is restored and Chrome started, not at its
// first screenshot.
func prepareArtifactsDir(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return errcode.New(errcode.InvalidInput, "--artifacts %s is a file, not a directory", dir).
			WithHint("give a directory for the screenshots (created when missing), or leave --artifacts out")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errcode.Hinted(err, errcode.InvalidInput, "give a directory you can create and write to, or leave --artifacts out",
			"--artifacts %s: cannot create the directory", dir)
	}
	f, err := os.CreateTemp(dir, ".director-write-check-")
	if err != nil {
		return errcode.Hinted(err, errcode.InvalidInput, "give a directory you can write to (check its permissions), or leave --artifacts out",
			"--artifacts %s: cannot write screenshots there", dir)
	}
	f.Close()
	return os.Remove(f.Name())
}

// progressPrinter prints one line per finished stage and step on stderr.
func progressPrinter(w io.Writer, total int) func(workflows.ProgressEvent) {
	return func(ev workflows.ProgressEvent) {
		if !ev.Done {
			return
		}
		d := ev.Duration.Round(time.Millisecond)
		result := "ok"
		if ev.Err != nil {
			result = fmt.Sprintf("failed [%s]", errcode.Of(ev.Err))
		}
		switch ev.Stage {
		case "step":
			st := ev.Step
			label := st.Kind
			if st.Name != "" {
				label = st.Name + " (" + st.Kind + ")"
			}
			attempt := ""
			if ev.Attempt > 1 || (ev.Err != nil && st.Retries > 0) {
				attempt = fmt.Sprintf(" attempt %d/%d", ev.Attempt, st.Retries+1)
			}
			fmt.Fprintf(w, "[%d/%d] %s line %d%s: %s %s\n", st.Index+1, total, label, st.Line, attempt, result, d)
		case "restore":
			what := "restored " + ev.Detail
			if ev.Detail == "" {
				what = "no snapshot restored"
			}
			if ev.Err != nil {
				what = result
			}
			fmt.Fprintf(w, "[restore] %s %s\n", what, d)
		case "login_check":
			r := "logged in"
			if ev.Err != nil {
				r = "NOT logged in [" + string(errcode.Of(ev.Err)) + "]"
			}
			fmt.Fprintf(w, "[login check] %s %s\n", r, d)
		case "close":
			fmt.Fprintf(w, "[close] %s %s\n", ev.Detail, d)
		default:
			fmt.Fprintf(w, "[%s] %s %s\n", ev.Stage, result, d)
		}
	}
}

// printResult is the text summary of a run.
func printResult(w io.Writer, out runOutput) {
	res := out.Result
	who := "incognito"
	if res.Profile != "" {
		who = "profile " + res.Profile
	}
	// A run that failed before it was recorded (a restore that found no
	// snapshot) has no run, session or end to name.
	var ids []string
	for _, id := range [][2]string{{"run", res.RunID}, {"session", res.SessionID}, {"end", res.EndReason}} {
		if id[1] != "" {
			ids = append(ids, id[0]+" "+id[1])
		}
	}
	idText := ""
	if len(ids) > 0 {
		idText = " (" + strings.Join(ids, ", ") + ")"
	}
	fmt.Fprintf(w, "%s: workflow %s on %s in %s%s\n", res.Status, res.Workflow, who,
		(time.Duration(res.Durations.TotalMS) * time.Millisecond).String(), idText)
	if f := res.FailedStep; f != nil {
		fmt.Fprintf(w, "  failed at step %d (%s) line %d [%s]\n", f.Index+1, f.Name, f.Line, f.Code)
	}
	for _, n := range out.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if res.RestoredID != "" {
		fmt.Fprintf(w, "  restored %s\n", res.RestoredID)
	}
	if res.KeptLocal != "" {
		fmt.Fprintf(w, "  %s\n", res.KeptLocal)
	}
	if res.LoginCheck != "none" {
		fmt.Fprintf(w, "  login check: %s\n", res.LoginCheck)
	}
	switch {
	case res.SnapshotID != "":
		fmt.Fprintf(w, "  snapshot %s\n", res.SnapshotID)
	case res.SnapshotSkipped != "":
		fmt.Fprintf(w, "  no snapshot: %s\n", res.SnapshotSkipped)
	}
	if len(res.Outputs) > 0 {
		keys := make([]string, 0, len(res.Outputs))
		for k := range res.Outputs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(w, "  outputs:")
		for _, k := range keys {
			fmt.Fprintf(w, "    %s = %v\n", k, res.Outputs[k])
		}
	}
	if res.ArtifactsDir != "" {
		fmt.Fprintf(w, "  artifacts in %s\n", res.ArtifactsDir)
	}
	for _, a := range res.Artifacts {
		fmt.Fprintf(w, "  artifact %s\n", a)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
