package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"

	"director/catalog"
	"director/errcode"
	"director/internal/s3test"
	"director/internal/testsite"
	"director/profiles"
	"director/session"
	"director/storage"
)

type env4 struct {
	site   *testsite.Site
	home   string
	m      *profiles.Manager
	cat    *catalog.DB
	runner *Runner
}

func newEnv(t *testing.T) *env4 {
	t.Helper()
	site := testsite.New(t)
	home := t.TempDir()
	ctx := context.Background()
	st, err := storage.Open(ctx, "file://"+filepath.Join(home, "snapshots"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(ctx, filepath.Join(home, "director.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	m := &profiles.Manager{Root: filepath.Join(home, "browser-profiles"), Store: st, Catalog: cat}
	tmp := filepath.Join(home, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Profiles: m, Catalog: cat, Launch: ChromeLauncher(ChromeOptions{ChromePath: chromePath(t), ExtraFlags: site.ChromeFlags()}), TempDir: tmp,
		ArtifactsDir: filepath.Join(home, "artifacts")}
	return &env4{site: site, home: home, m: m, cat: cat, runner: r}
}

// wf parses a workflow whose text uses SITE for the test site's base URL.
func (e *env4) wf(t *testing.T, src string) *Workflow {
	t.Helper()
	src = strings.ReplaceAll(src, "SITE", e.site.URL)
	src = strings.ReplaceAll(src, "BLOCKED", e.site.On(testsite.BlockedHost, ""))
	w, err := Parse(t.Name()+".yaml", []byte(src), LoadOptions{LookupEnv: func(k string) (string, bool) {
		if k == "TEST_PASSWORD" {
			return "secret", true
		}
		return "", false
	}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (e *env4) run(t *testing.T, w *Workflow) (*Result, error) {
	t.Helper()
	res, err := e.runner.Run(context.Background(), w)
	if res == nil {
		t.Fatal("nil result")
	}
	if (err == nil) != (res.Status == StatusOK) {
		t.Fatalf("status %s with error %v", res.Status, err)
	}
	return res, err
}

func mustOK(t *testing.T, res *Result, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("run failed: %v [%s]\nsteps: %+v", err, errcode.Of(err), res.Steps)
	}
}

// loginCheckYAML is the test site's login check, as workflows write it.
const loginCheckYAML = `login_check:
  url: SITE/account
  logged_in_selector: "#whoami"
  login_wall_selector: form#login
`

const loginWF = `name: login
profile: web
snapshot: on_success
` + loginCheckYAML + `vars:
  user: alice
steps:
  - navigate: SITE/login
  - type: {selector: "#username", text: "${vars.user}"}
  - type: {selector: "#password", text: "${env.TEST_PASSWORD}"}
  - click: "#submit"
  - wait_for: "#whoami"
  - navigate: SITE/storage?set=kept
  - wait_for: "#ready"
  - navigate: SITE/setcookie?name=late&value=v1&max_age=3600
`

const checkWF = `name: check
profile: web
snapshot: never
steps:
  - navigate: SITE/account
  - extract: {selector: "#whoami", as: who}
  - navigate: SITE/storage
  - wait_for: "#ready"
  - extract: {selector: "#ls", as: ls}
  - extract: {selector: "#idb", as: idb}
  - navigate: SITE/cookies
  - extract: {selector: "#cookies", as: cookies}
`

// TestLoginSnapshotWipeRestore: workflow 1 logs in and snapshots (its last
// action sets a cookie right before the graceful close); the profile dir is
// deleted; workflow 2 restores and is still logged in, with localStorage,
// IndexedDB and the late cookie intact.
func TestLoginSnapshotWipeRestore(t *testing.T) {
	e := newEnv(t)
	res, err := e.run(t, e.wf(t, loginWF))
	mustOK(t, res, err)
	if res.SnapshotID == "" || res.LoginCheck != "passed" || res.EndReason != "completed" {
		t.Fatalf("login run: %+v", res)
	}
	if e.site.Logins() != 1 {
		t.Fatalf("%d logins", e.site.Logins())
	}
	if err := os.RemoveAll(e.m.Dir("web")); err != nil {
		t.Fatal(err)
	}
	res2, err := e.run(t, e.wf(t, checkWF))
	mustOK(t, res2, err)
	if res2.RestoredID != res.SnapshotID {
		t.Fatalf("restored %q, want %q", res2.RestoredID, res.SnapshotID)
	}
	if res2.Outputs["who"] != "Logged in as alice" {
		t.Fatalf("not logged in after restore: %v", res2.Outputs)
	}
	if res2.Outputs["ls"] != "kept" || res2.Outputs["idb"] != "kept" {
		t.Fatalf("storage after restore: ls=%v idb=%v", res2.Outputs["ls"], res2.Outputs["idb"])
	}
	// The cookie set less than a second before the end of run 1.
	if c, _ := res2.Outputs["cookies"].(string); !strings.Contains(c, `"late":"v1"`) {
		t.Fatalf("late cookie missing from the snapshot: %v", res2.Outputs["cookies"])
	}
	// The session-only cookie survives too (ChromeLauncher keeps session cookies).
	if c, _ := res2.Outputs["cookies"].(string); !strings.Contains(c, `"sess":"s-`) {
		t.Fatalf("session cookie missing after restore: %v", res2.Outputs["cookies"])
	}
	if e.site.Logins() != 1 {
		t.Fatal("workflow 2 logged in again")
	}
	if res2.SnapshotID != "" || res2.SnapshotSkipped != "snapshot: never" {
		t.Fatalf("snapshot never: %+v", res2)
	}

	// The catalog has both runs, their sessions and audit events without secrets.
	runs, err := e.cat.ListRuns(context.Background(), "web", 0)
	if err != nil || len(runs) != 2 || runs[0].Status != "ok" || runs[1].SnapshotID != res.SnapshotID {
		t.Fatalf("runs: %+v %v", runs, err)
	}
	evs, err := e.cat.ListEvents(context.Background(), catalog.EventFilter{Session: res.SessionID})
	if err != nil || len(evs) < 10 {
		t.Fatalf("events: %d %v", len(evs), err)
	}
	for _, ev := range evs {
		if strings.Contains(ev.Detail, "secret") {
			t.Fatalf("audit event holds the password: %+v", ev)
		}
	}
	if evs[0].Kind != catalog.EventSessionEnd || !strings.Contains(evs[0].Detail, "reason=completed") {
		t.Fatalf("newest event: %+v", evs[0])
	}

	// The server invalidates the session: the refresh exits 3 and latest
	// still points at the good snapshot.
	e.site.Invalidate("")
	refresh := e.wf(t, `name: refresh
profile: web
snapshot: always
login_check:
  url: SITE/account
  logged_in_selector: "#whoami"
  login_wall_selector: form#login
steps:
  - navigate: SITE/
`)
	res3, err := e.run(t, refresh)
	if errcode.Of(err) != errcode.HumanRequired || errcode.ExitStatus(err) != 3 || res3.Status != StatusHumanRequired {
		t.Fatalf("refresh after invalidation: %v [%s] %+v", err, errcode.Of(err), res3)
	}
	wantCmd := "director profile open web --url " + e.site.URL + "/account --snapshot"
	if !strings.Contains(errcode.HintOf(err), wantCmd) {
		t.Fatalf("hint %q lacks %q", errcode.HintOf(err), wantCmd)
	}
	if res3.SnapshotID != "" || res3.EndReason != "human_required" || res3.LoginCheck != "failed" {
		t.Fatalf("refresh result: %+v", res3)
	}
	snaps, err := e.m.Snapshots(context.Background(), "web")
	if err != nil || len(snaps) != 1 || snaps[0].ID != res.SnapshotID {
		t.Fatalf("snapshots after a logged-out refresh: %+v %v", snaps, err)
	}
}

func TestBlockedDomainStopsRun(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ name, steps string }{
		{"link click", "  - navigate: SITE/links\n  - click: \"#blocked-link\"\n  - extract: {selector: h1, as: h}\n"},
		{"server redirect", "  - navigate: SITE/redirect?to=BLOCKED/landing\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := e.wf(t, "name: blocked\nprofile: web\nrestore: none\nsession:\n  blocklist: [blocked.test]\nsteps:\n"+c.steps)
			res, err := e.run(t, w)
			if errcode.Of(err) != errcode.DomainBlocked || errcode.ExitStatus(err) != 4 || res.Status != StatusDomainBlocked {
				t.Fatalf("got %v [%s] status %s", err, errcode.Of(err), res.Status)
			}
			if hint := errcode.HintOf(err); !strings.Contains(hint, `remove "blocked.test" from session.blocklist`) {
				t.Errorf("hint %q does not name the blocklist entry", hint)
			}
			if res.EndReason != "domain_blocked" || res.SnapshotID != "" || res.FailedStep == nil {
				t.Fatalf("result: %+v", res)
			}
			if e.site.Hits("/landing") != 0 {
				t.Fatal("the blocked page was loaded")
			}
			evs, err := e.cat.ListEvents(context.Background(), catalog.EventFilter{Session: res.SessionID})
			if err != nil {
				t.Fatal(err)
			}
			var blocked bool
			for _, ev := range evs {
				if ev.ResultCode == "domain_blocked" && ev.Domain == testsite.BlockedHost {
					blocked = true
				}
			}
			if !blocked {
				t.Fatalf("no domain_blocked audit event: %+v", evs)
			}
			sess, err := e.cat.GetSession(context.Background(), res.SessionID)
			if err != nil || sess.EndReason != "domain_blocked" {
				t.Fatalf("catalog session: %+v %v", sess, err)
			}
		})
	}
}

func TestLimitsEndSession(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name, session, steps, reason string
	}{
		{"idle timeout", "  idle_timeout: 1s\n", "  - navigate: SITE/\n  - sleep: 5s\n", "idle_timeout"},
		{"max duration", "  idle_timeout: 1m\n  max_duration: 2s\n", "  - navigate: SITE/\n  - navigate: SITE/slow?ms=800\n  - navigate: SITE/slow?ms=800\n  - navigate: SITE/slow?ms=800\n  - navigate: SITE/slow?ms=800\n", "max_duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.wf(t, "name: limits\nprofile: null\nsession:\n"+c.session+"steps:\n"+c.steps)
			res, err := e.run(t, w)
			if errcode.Of(err) != errcode.Timeout || res.Status != StatusFailed || res.EndReason != c.reason {
				t.Fatalf("got %v [%s] status %s end %s", err, errcode.Of(err), res.Status, res.EndReason)
			}
			sess, err := e.cat.GetSession(context.Background(), res.SessionID)
			if err != nil || sess.EndReason != c.reason {
				t.Fatalf("catalog session: %+v %v", sess, err)
			}
		})
	}
}

func TestStepErrorsCarryCodes(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name, steps string
		code        errcode.Code
		failed      int
	}{
		{"element_not_found", "  - navigate: SITE/widgets\n  - click: \"#missing\"\n    timeout: 600ms\n", errcode.ElementNotFound, 1},
		{"timeout", "  - navigate: SITE/widgets\n  - wait_for: {url: \"*/never*\"}\n    timeout: 600ms\n", errcode.Timeout, 1},
		{"retries then fail", "  - navigate: SITE/widgets\n  - wait_for: \"#nothing\"\n    timeout: 300ms\n    retries: 2\n", errcode.Timeout, 1},
		{"captcha", "  - navigate: SITE/captcha\n", errcode.HumanRequired, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.wf(t, "name: errs\nprofile: null\nsteps:\n"+c.steps+"  - navigate: SITE/\n")
			res, err := e.run(t, w)
			if errcode.Of(err) != c.code {
				t.Fatalf("got %v [%s], want %s", err, errcode.Of(err), c.code)
			}
			if res.FailedStep == nil || res.FailedStep.Index != c.failed || res.FailedStep.Code != c.code {
				t.Fatalf("failed step: %+v", res.FailedStep)
			}
			if res.Steps[len(res.Steps)-1].Status != "skipped" {
				t.Fatalf("later steps not skipped: %+v", res.Steps)
			}
			if !strings.Contains(err.Error(), w.File+":") {
				t.Fatalf("error does not name the file and line: %v", err)
			}
			if c.name == "retries then fail" && res.Steps[1].Attempts != 3 {
				t.Fatalf("attempts %d, want 3", res.Steps[1].Attempts)
			}
		})
	}
}

func TestRetriesRecover(t *testing.T) {
	e := newEnv(t)
	// The element appears 1.5 s after the script step: the first 300 ms
	// attempt cannot see it, a retry does.
	w := e.wf(t, `name: retry
profile: null
steps:
  - navigate: SITE/widgets
  - evaluate: "setTimeout(() => { const p = document.createElement('p'); p.id = 'late2'; p.textContent = 'x'; document.body.append(p); }, 1500); 1"
  - wait_for: "#late2"
    timeout: 300ms
    retries: 10
`)
	res, err := e.run(t, w)
	mustOK(t, res, err)
	if res.Steps[2].Attempts < 2 {
		t.Fatalf("attempts %d, want a retry", res.Steps[2].Attempts)
	}
}

func TestMalformedWorkflowNamesLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(p, []byte("name: x\nprofile: p\nsteps:\n  - click: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p, LoadOptions{})
	if errcode.Of(err) != errcode.InvalidAction || errcode.ExitStatus(err) != 2 || !strings.Contains(err.Error(), p+":4:") {
		t.Fatalf("got %v", err)
	}
}

func TestTwoRunsOnOneProfile(t *testing.T) {
	e := newEnv(t)
	slow := e.wf(t, "name: slow\nprofile: web\nrestore: none\nsnapshot: never\nsteps:\n  - navigate: SITE/\n  - sleep: 4s\n")
	var wg sync.WaitGroup
	wg.Add(1)
	var firstErr error
	go func() {
		defer wg.Done()
		_, firstErr = e.runner.Run(context.Background(), slow)
	}()
	// Wait until the first run is on its sleep step: it navigated to the
	// site, so it holds the profile lock. (Probing with Lock would race it:
	// a probe holding the lock for an instant makes the first run's
	// fail-fast Lock fail.)
	deadline := time.Now().Add(20 * time.Second)
	for e.site.Hits("/") == 0 {
		if time.Now().After(deadline) {
			wg.Wait()
			t.Fatalf("the first run never reached the site (first run: %v)", firstErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := e.m.Lock(context.Background(), "web", -1); errcode.Of(err) != errcode.ProfileInUse {
		t.Fatalf("Lock while the first run is on its sleep step: %v, want profile_in_use", err)
	}
	t0 := time.Now()
	res, err := e.run(t, slow)
	if errcode.Of(err) != errcode.ProfileInUse || res.Status != StatusFailed {
		t.Fatalf("second run: %v [%s]", err, errcode.Of(err))
	}
	if time.Since(t0) > 3*time.Second {
		t.Fatalf("the second run waited %s instead of failing fast", time.Since(t0))
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("first run: %v", firstErr)
	}
}

func TestIncognitoLeavesNothing(t *testing.T) {
	e := newEnv(t)
	w := e.wf(t, "name: inc\nprofile: null\nsteps:\n  - navigate: SITE/storage?set=x\n  - wait_for: \"#ready\"\n  - screenshot: shot.png\n")
	res, err := e.run(t, w)
	mustOK(t, res, err)
	left, _ := os.ReadDir(e.runner.TempDir)
	if len(left) != 0 {
		t.Fatalf("incognito run left %v in the temp dir", left)
	}
	if _, err := os.Stat(e.m.Root); err == nil {
		if ents, _ := os.ReadDir(e.m.Root); len(ents) != 0 {
			t.Fatalf("incognito run created profiles: %v", ents)
		}
	}
	if len(res.Artifacts) != 1 || res.SnapshotID != "" || res.Profile != "" {
		t.Fatalf("result: %+v", res)
	}
	if _, err := os.Stat(res.Artifacts[0]); err != nil {
		t.Fatal(err)
	}
}

// TestExamples runs the shipped examples against the test site in order:
// login, refresh, extract; then a refresh after the server dropped the
// session exits human_required and keeps the latest snapshot.
func TestExamples(t *testing.T) {
	e := newEnv(t)
	load := func(name string) *Workflow {
		w, err := Load(filepath.Join("..", "examples", name), LoadOptions{
			Vars:      map[string]string{"site": e.site.URL},
			LookupEnv: func(k string) (string, bool) { return "secret", k == "DEMO_PASSWORD" },
		})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	res, err := e.run(t, load("login.yaml"))
	mustOK(t, res, err)
	if res.SnapshotID == "" {
		t.Fatal("login.yaml took no snapshot")
	}
	os.RemoveAll(e.m.Dir("demo"))
	res, err = e.run(t, load("refresh.yaml"))
	mustOK(t, res, err)
	good := res.SnapshotID
	if good == "" || res.LoginCheck != "passed" {
		t.Fatalf("refresh.yaml: %+v", res)
	}
	res, err = e.run(t, load("extract.yaml"))
	mustOK(t, res, err)
	if res.Outputs["user"] != "Logged in as alice" || res.Outputs["local_storage"] != "remember-me" ||
		len(res.Outputs["items"].([]string)) != 3 || res.Outputs["title"] != "Widgets" || len(res.Artifacts) != 1 || res.SnapshotID != "" {
		t.Fatalf("extract.yaml: %+v", res)
	}
	e.site.Invalidate("")
	res, err = e.run(t, load("refresh.yaml"))
	if errcode.Of(err) != errcode.HumanRequired || res.SnapshotID != "" {
		t.Fatalf("refresh after invalidation: %v %+v", err, res)
	}
	snaps, _ := e.m.Snapshots(context.Background(), "demo")
	if len(snaps) == 0 || snaps[0].ID != good {
		t.Fatalf("latest is not the last good snapshot: %+v", snaps)
	}
}

// TestMidRunSnapshotNeedsTheLoginCheck: a snapshot step becomes the latest
// snapshot at once, so it is taken only when the workflow's login check
// passes right before it (in a tab of its own: the steps' tab keeps its
// page); a logged-out profile is never snapshotted mid-run, and the latest
// good snapshot stays the latest.
func TestMidRunSnapshotNeedsTheLoginCheck(t *testing.T) {
	e := newEnv(t)
	res, err := e.run(t, e.wf(t, loginWF))
	mustOK(t, res, err)
	good := res.SnapshotID

	const checked = `name: mid
profile: web
snapshot: on_success
` + loginCheckYAML + `steps:
  - navigate: SITE/storage
  - wait_for: "#ready"
  - snapshot: {note: checkpoint}
  - wait_for: "#ready"
  - extract: {selector: "#ls", as: ls}
`
	res, err = e.run(t, e.wf(t, checked))
	mustOK(t, res, err)
	mid, latest := res.Steps[2].SnapshotID, res.SnapshotID
	if mid == "" || latest == "" || res.Outputs["ls"] != "kept" {
		t.Fatalf("logged-in run: mid-run snapshot %q, final %q, outputs %+v", mid, latest, res.Outputs)
	}

	loggedOut := strings.Replace(checked, "  - navigate: SITE/storage\n  - wait_for: \"#ready\"\n", "  - navigate: SITE/logout\n", 1)
	res, err = e.run(t, e.wf(t, loggedOut))
	if errcode.Of(err) != errcode.HumanRequired || res.Steps[1].Status != "failed" || res.Steps[1].SnapshotID != "" || res.SnapshotID != "" {
		t.Fatalf("logged-out run: %v [%s], snapshot %q, steps %+v", err, errcode.Of(err), res.SnapshotID, res.Steps)
	}
	if !strings.Contains(errcode.HintOf(err), "profile open web") {
		t.Errorf("hint %q does not give the command that logs in again", errcode.HintOf(err))
	}
	snaps, err := e.m.Snapshots(context.Background(), "web")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range snaps {
		ids = append(ids, s.ID)
	}
	if want := []string{latest, mid, good}; !slices.Equal(ids, want) {
		t.Fatalf("snapshots after the logged-out run: %v, want %v (newest first)", ids, want)
	}
}

// TestInterruptedRun: Ctrl-C (a cancelled context) ends the session as
// user_stopped, still closes Chrome gracefully, and takes no snapshot.
func TestInterruptedRun(t *testing.T) {
	e := newEnv(t)
	w := e.wf(t, "name: stop\nprofile: web\nrestore: none\nsnapshot: always\n"+loginCheckYAML+"steps:\n  - navigate: SITE/setcookie?name=k&value=v&max_age=600\n  - sleep: 30s\n")
	ctx, cancel := context.WithCancel(context.Background())
	e.runner.Progress = func(ev ProgressEvent) {
		if ev.Stage == "step" && !ev.Done && ev.Step.Kind == StepSleep {
			time.AfterFunc(300*time.Millisecond, cancel)
		}
	}
	t0 := time.Now()
	res, err := e.runner.Run(ctx, w)
	if errcode.Of(err) != errcode.Interrupted || res.EndReason != "user_stopped" || res.SnapshotID != "" || time.Since(t0) > 20*time.Second {
		t.Fatalf("interrupted run: %v %+v", err, res)
	}
	sess, _ := e.cat.GetSession(context.Background(), res.SessionID)
	if sess.EndReason != "user_stopped" {
		t.Fatalf("catalog session %+v", sess)
	}
}

// TestMidRunSnapshot: a snapshot step closes Chrome gracefully, snapshots,
// relaunches and reopens the tab, which is still logged in.
func TestMidRunSnapshot(t *testing.T) {
	e := newEnv(t)
	w := e.wf(t, `name: mid
profile: web
restore: none
snapshot: never
`+loginCheckYAML+`steps:
  - navigate: SITE/login
  - type: {selector: "#username", text: alice}
  - type: {selector: "#password", text: secret}
  - click: "#submit"
  - wait_for: "#whoami"
  - snapshot: {note: after login}
  - extract: {selector: "#whoami", as: who}
`)
	res, err := e.run(t, w)
	mustOK(t, res, err)
	mid := res.Steps[5].SnapshotID
	if mid == "" || res.Outputs["who"] != "Logged in as alice" || res.SnapshotID != "" {
		t.Fatalf("result: %+v", res)
	}
	snaps, err := e.m.Snapshots(context.Background(), "web")
	if err != nil || len(snaps) != 1 || snaps[0].ID != mid || snaps[0].Note != "after login" {
		t.Fatalf("snapshots: %+v %v", snaps, err)
	}
}

// TestHumanRequiredHint: the hint of a lost login says where to log in
// again: the local profile (with the login check's URL, as a command in
// backticks, which cmd/director makes name the run's home and store), the
// remote browser of --cdp-url, or nowhere for an incognito run.
func TestHumanRequiredHint(t *testing.T) {
	cause := errcode.New(errcode.HumanRequired, "login wall")
	local := &Workflow{Name: "refresh", Profile: "web", LoginCheck: &LoginCheck{URL: "https://example.com/account"}}
	cases := []struct {
		name     string
		r        Runner
		w        *Workflow
		has, not string
	}{
		{"local profile", Runner{}, local, "`director profile open web --url https://example.com/account --snapshot`", "--cdp-url"},
		{"a URL the shell would cut", Runner{}, &Workflow{Name: "refresh", Profile: "web", LoginCheck: &LoginCheck{URL: "https://example.com/account?a=1&next=/x y"}},
			"`director profile open web --url 'https://example.com/account?a=1&next=/x y' --snapshot`", "--cdp-url"},
		{"remote browser", Runner{RemoteBrowser: true}, local, "remote browser given by --cdp-url", "profile open"},
		{"incognito", Runner{}, &Workflow{Name: "x", Incognito: true}, "cannot keep a login", "profile open"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.r.humanRequired(c.w, nil, cause)
			if errcode.Of(err) != errcode.HumanRequired || errcode.ExitStatus(err) != 3 {
				t.Fatalf("got %v, want human_required", err)
			}
			if h := errcode.HintOf(err); !strings.Contains(h, c.has) || strings.Contains(h, c.not) {
				t.Errorf("hint %q: want %q and not %q", h, c.has, c.not)
			}
		})
	}
}

// TestRunRefusesWorkerWebSockets: a run puts its domain policy into
// Chrome's host resolver rules, so a WebSocket that a page's worker opens
// to a blocked host (out of reach of the per-tab checks) never leaves the
// browser, and the run goes on. With another host blocked the same
// WebSocket reaches the site, so the page does open it.
func TestRunRefusesWorkerWebSockets(t *testing.T) {
	e := newEnv(t)
	const steps = `steps:
  - navigate: SITE/
  - evaluate:
      expression: |
        new Promise(done => {
          const src = "const c = new WebSocket(" + JSON.stringify("WS/ws-probe") + ");" +
            "c.onopen = () => postMessage('open'); c.onerror = () => postMessage('error');";
          const w = new Worker(URL.createObjectURL(new Blob([src])));
          w.onmessage = e => done(e.data);
        })
      as: ws
`
	for _, c := range []struct {
		blocked string
		reaches bool
	}{{testsite.BlockedHost, false}, {"other.test", true}} {
		t.Run(c.blocked, func(t *testing.T) {
			before := e.site.Hits("/ws-probe")
			src := "name: worker-ws\nprofile: web\nrestore: none\nsession:\n  blocklist: [" + c.blocked + "]\n" + steps
			w := e.wf(t, strings.ReplaceAll(src, "WS", "ws"+strings.TrimPrefix(e.site.On(testsite.BlockedHost, ""), "http")))
			res, err := e.run(t, w)
			if err != nil {
				t.Fatalf("run: %v [%s]", err, errcode.Of(err))
			}
			if got := e.site.Hits("/ws-probe") - before; (got > 0) != c.reaches {
				t.Fatalf("the WebSocket reached the site %d times (the worker says %v)", got, res.Outputs["ws"])
			}
			if !c.reaches && res.Outputs["ws"] != "error" {
				t.Fatalf("the worker says %v", res.Outputs["ws"])
			}
		})
	}
}

// TestFailedRunAuditsItsCode: the session_end event of a run that failed
// carries the failure's code, so a search of the audit log by result finds
// it; a completed run's is ok.
func TestFailedRunAuditsItsCode(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ steps, code string }{
		{"  - navigate: SITE/\n  - click: \"#no-such-button\"\n    timeout: 1s\n", "element_not_found"},
		{"  - navigate: SITE/\n", ""},
	} {
		want := c.code
		if want == "" {
			want = "ok"
		}
		w := e.wf(t, "name: failing\nprofile: web\nrestore: none\nsteps:\n"+c.steps)
		res, err := e.run(t, w)
		if errcode.Of(err) != errcode.Code(c.code) {
			t.Fatalf("run: %v [%s], want %q", err, errcode.Of(err), c.code)
		}
		evs, lerr := e.cat.ListEvents(context.Background(), catalog.EventFilter{Session: res.SessionID})
		if lerr != nil {
			t.Fatal(lerr)
		}
		var ends []string
		for _, ev := range evs {
			if ev.Kind == "session_end" {
				ends = append(ends, ev.ResultCode)
			}
		}
		if len(ends) != 1 || ends[0] != want {
			t.Fatalf("session_end result codes %q, want [%q]: %+v", ends, want, evs)
		}
	}
}

// TestErrorsNeverQuoteEnvValues: a value a workflow takes from the
// environment (a token, a password) is shown as ${env.NAME} wherever an
// error would quote it: a JavaScript exception that echoes the expression,
// an assert that names its pattern, directly or through vars. Nothing of a
// run's output, logs or audit trail holds the value.
func TestErrorsNeverQuoteEnvValues(t *testing.T) {
	e := newEnv(t)
	const token = "tok3f9aQ7zX"
	var logs bytes.Buffer
	e.runner.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cases := []struct {
		name, step string
		code       errcode.Code
	}{
		{"exception quotes a string", `evaluate: {expression: "JSON.parse('${env.TOKEN}')", as: x}`, errcode.InvalidAction},
		{"exception quotes a name", `evaluate: "undefinedVar_${env.TOKEN}"`, errcode.InvalidAction},
		{"through vars", `evaluate: "JSON.parse('${vars.t}')"`, errcode.InvalidAction},
		{"assert names its pattern", "assert: {url: \"*${env.TOKEN}*\"}\n    timeout: 300ms", errcode.Timeout},
		{"thrown by the page", "evaluate: \"(() => { throw new Error('bad token ' + '${env.TOKEN}') })()\"", errcode.InvalidAction},
		// The audit event's detail names the selector.
		{"a selector names it", "click: \"a[href='/${env.TOKEN}']\"\n    timeout: 300ms", errcode.ElementNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "name: secrets\nprofile: null\nvars:\n  t: ${env.TOKEN}\nsteps:\n  - navigate: " + e.site.URL + "/\n  - " + c.step + "\n"
			w, err := Parse("secrets.yaml", []byte(src), LoadOptions{LookupEnv: func(k string) (string, bool) {
				return token, k == "TOKEN"
			}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.run(t, w)
			if errcode.Of(err) != c.code {
				t.Fatalf("got %v [%s], want %s", err, errcode.Of(err), c.code)
			}
			if !strings.Contains(err.Error(), "${env.TOKEN}") || !strings.Contains(err.Error(), "secrets.yaml:") {
				t.Errorf("the error does not show the reference where the value was: %v", err)
			}
			out, _ := json.Marshal(res)
			for what, s := range map[string]string{"error": err.Error(), "hint": errcode.HintOf(err), "--json result": string(out), "logs": logs.String()} {
				if strings.Contains(s, token) {
					t.Errorf("%s holds the value of TOKEN: %s", what, s)
				}
			}
			if res.FailedStep == nil || !strings.Contains(res.FailedStep.Message, "${env.TOKEN}") {
				t.Errorf("failed step: %+v", res.FailedStep)
			}
		})
	}
	events, err := e.cat.ListEvents(context.Background(), catalog.EventFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 {
		t.Fatal("no audit events recorded")
	}
	for _, ev := range events {
		if b, _ := json.Marshal(ev); bytes.Contains(b, []byte(token)) {
			t.Errorf("audit event holds the value of TOKEN: %s", b)
		}
	}
}

// A value with characters Chrome and Go escape differently in a URL (a
// space is %20 to Chrome, "!" stays) is still shown as its reference when
// an error quotes the page's URL.
func TestErrorsNeverQuoteEnvValuesChromeEscaped(t *testing.T) {
	e := newEnv(t)
	const token = "my pass!x"
	src := "name: esc\nprofile: null\nsteps:\n  - navigate: \"" + e.site.URL + "/?t=${env.TOKEN}\"\n  - click: \"#nope\"\n    timeout: 300ms\n"
	w, err := Parse("esc.yaml", []byte(src), LoadOptions{LookupEnv: func(k string) (string, bool) { return token, k == "TOKEN" }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.run(t, w)
	if errcode.Of(err) != errcode.ElementNotFound {
		t.Fatalf("got %v [%s], want element_not_found", err, errcode.Of(err))
	}
	out, _ := json.Marshal(res)
	for what, s := range map[string]string{"error": err.Error(), "--json result": string(out)} {
		if strings.Contains(s, "my%20pass") || strings.Contains(s, "my pass") || strings.Contains(s, "my+pass") {
			t.Errorf("%s holds the value of TOKEN: %s", what, s)
		}
	}
	if !strings.Contains(err.Error(), "${env.TOKEN}") {
		t.Errorf("the error does not show the reference: %v", err)
	}
}

// Redact replaces the longest value first, leaves short values alone and
// leaves a workflow without env values untouched.
func TestRedact(t *testing.T) {
	env := map[string]string{"A": "abcd", "B": "abcdefgh", "SHORT": "ab", "T": "my pass!|{x}"}
	w, err := Parse("r.yaml", []byte("name: r\nprofile: null\nvars:\n  a: ${env.A}\n  b: ${env.B}\n  s: ${env.SHORT}\n  t: ${env.T}\nsteps:\n  - navigate: http://127.0.0.1/\n"),
		LoadOptions{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ in, want string }{
		{"x abcdefgh y", "x ${env.B} y"},
		{"abcd and abcdefgh", "${env.A} and ${env.B}"},
		{"ab stays", "ab stays"},
		{"nothing", "nothing"},
		// Escaped as Go does, and as Chrome does (a space as %20, "!",
		// "|" and braces as they are, or some of them escaped).
		{"on http://h/?t=my+pass%21%7C%7Bx%7D: gone", "on http://h/?t=${env.T}: gone"},
		{"on http://h/?t=my%20pass!|{x}: gone", "on http://h/?t=${env.T}: gone"},
		{"on http://h/my%20pass%21|%7Bx}: gone", "on http://h/${env.T}: gone"},
		{"100% sure, no secret %zz", "100% sure, no secret %zz"},
		{"a%20b stays escaped", "a%20b stays escaped"},
		// Only the value's span is decoded: the rest of the message is
		// left as it was (no newline or escape byte made from %0A, %1B).
		{"next=https%3A%2F%2Fy%2F%3Fa%3D1&t=my%20pass!|{x} line1%0Aline2%1B[31m", "next=https%3A%2F%2Fy%2F%3Fa%3D1&t=${env.T} line1%0Aline2%1B[31m"},
	}
	for _, c := range cases {
		if got := w.Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	plain, err := Parse("p.yaml", []byte("name: p\nprofile: null\nsteps:\n  - navigate: http://127.0.0.1/\n"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := plain.Redact("abcdefgh"); got != "abcdefgh" {
		t.Errorf("a workflow without env values redacted %q", got)
	}
}

// TestLoginWallInAStep: a step that fails on a page showing the login wall
// ends the run human_required (exit 3, the log-in-again hint, no snapshot):
// the login expired, the selector is fine. Without the wall on the page, or
// without a login check naming it, the step's own error stands.
func TestLoginWallInAStep(t *testing.T) {
	e := newEnv(t)
	// add puts elements into the widgets page: a login form hidden in
	// every page, or the logged-in marker beside a shown form.
	add := func(html string) string {
		return "SITE/widgets\n  - evaluate: \"document.body.insertAdjacentHTML('beforeend', '" + html + "'), 1\""
	}
	cases := []struct {
		name, check, page string
		code              errcode.Code
	}{
		{"wall shown", loginCheckYAML, "SITE/account", errcode.HumanRequired},
		{"wall not shown", loginCheckYAML, "SITE/widgets", errcode.ElementNotFound},
		{"no login check", "", "SITE/account", errcode.ElementNotFound},
		{"wall hidden in the page", loginCheckYAML, add("<form id=login style=display:none></form>"), errcode.ElementNotFound},
		{"wall beside the logged-in marker", loginCheckYAML, add("<p id=whoami>me</p><form id=login>x</form>"), errcode.ElementNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.wf(t, "name: wall\nprofile: walled\n"+c.check+"steps:\n  - navigate: "+c.page+
				"\n  - extract: {selector: \"#nothing\", as: who}\n    timeout: 300ms\n    retries: 1\n")
			res, err := e.run(t, w)
			if errcode.Of(err) != c.code {
				t.Fatalf("got %v [%s], want %s", err, errcode.Of(err), c.code)
			}
			last := len(w.Steps) - 1
			if res.FailedStep == nil || res.FailedStep.Index != last {
				t.Fatalf("failed step: %+v", res.FailedStep)
			}
			if want := map[bool]int{true: 1, false: 2}[c.code == errcode.HumanRequired]; res.Steps[last].Attempts != want {
				t.Errorf("attempts %d, want %d", res.Steps[last].Attempts, want)
			}
			if res.SnapshotID != "" {
				t.Fatalf("a failed run took snapshot %s", res.SnapshotID)
			}
			if c.code != errcode.HumanRequired {
				return
			}
			if errcode.ExitStatus(err) != 3 || res.Status != StatusHumanRequired {
				t.Errorf("exit %d, status %s", errcode.ExitStatus(err), res.Status)
			}
			msg, hint := err.Error(), errcode.HintOf(err)
			for _, want := range []string{"shows the login wall (form#login)", "#nothing", w.File + ":"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if !strings.Contains(hint, "director profile open walled --url "+e.site.URL+"/account --snapshot") {
				t.Errorf("hint %q", hint)
			}
		})
	}
}

// snapshotSkip names the real reason no snapshot was taken.
func TestSnapshotSkip(t *testing.T) {
	wf := &Workflow{Name: "w", Profile: "p", Snapshot: SnapshotOnSuccess, LoginCheck: &LoginCheck{URL: "http://127.0.0.1/"}}
	human := errcode.New(errcode.HumanRequired, "wall")
	notFound := errcode.New(errcode.ElementNotFound, "gone")
	cases := []struct {
		name    string
		w       *Workflow
		err     error
		loginOK bool
		check   string
		want    string
	}{
		{"ok", wf, nil, true, "passed", ""},
		{"login check logged out", wf, human, false, "failed", "human required: the login check found the profile logged out"},
		{"a step met the wall", wf, human, false, "not_run", "human required: a step met a login wall or a CAPTCHA"},
		{"a step failed", wf, notFound, false, "not_run", "a step failed, so the login check did not run"},
		{"check failed otherwise", wf, errcode.New(errcode.Internal, "500"), false, "failed", "login check did not pass"},
		{"blocked", wf, errcode.New(errcode.DomainBlocked, "x"), false, "not_run", "run stopped at a blocked domain"},
		{"never", &Workflow{Snapshot: SnapshotNever}, nil, true, "none", "snapshot: never"},
		{"incognito", &Workflow{Incognito: true}, nil, true, "none", "incognito run"},
		// Parse refuses these workflows; a Workflow built by hand still
		// never snapshots without a check.
		{"no login check, step failed", &Workflow{Snapshot: SnapshotOnSuccess}, notFound, false, "none", "no login_check proves the login"},
		{"no login check, steps passed", &Workflow{Snapshot: SnapshotAlways}, nil, false, "none", "no login_check proves the login"},
		// Ctrl-C during a step or during the login check.
		{"interrupted in a step", wf, errcode.New(errcode.Interrupted, "interrupted"), false, "not_run", "run interrupted"},
		{"interrupted in the check", wf, errcode.Wrap(context.Canceled, errcode.Interrupted, "interrupted"), false, "not_run", "run interrupted"},
	}
	for _, c := range cases {
		if got := snapshotSkip(c.w, c.err, c.loginOK, c.check); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRunClosesWhatAKilledRunLeftOpen: a director killed mid-run leaves
// its run "running" and its session "active" in the catalog. The next run
// of that profile, holding the profile's lock, closes them (failed,
// interrupted) and gives the session its session_end audit event. Runs of
// other profiles and incognito runs whose process (this test's) is alive
// stay.
func TestRunClosesWhatAKilledRunLeftOpen(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	open := func(profile string) (catalog.Run, catalog.Session) {
		run, err := e.cat.StartRun(ctx, catalog.Run{Workflow: "killed", Profile: profile})
		if err != nil {
			t.Fatal(err)
		}
		s, err := e.cat.StartSession(ctx, catalog.Session{Profile: profile, RunID: run.ID})
		if err != nil {
			t.Fatal(err)
		}
		return run, s
	}
	killedRun, killedSession := open("web")
	otherRun, otherSession := open("other")
	incognitoRun, incognitoSession := open("")

	res, err := e.run(t, e.wf(t, "name: next\nprofile: web\nsnapshot: never\nsteps:\n  - navigate: SITE/\n"))
	mustOK(t, res, err)

	run, err := e.cat.GetRun(ctx, killedRun.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != catalog.RunFailed || run.ErrorCode != string(errcode.Interrupted) || run.EndedAt.IsZero() {
		t.Errorf("the killed run: %+v, want failed, interrupted, with an end time", run)
	}
	s, err := e.cat.GetSession(ctx, killedSession.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != catalog.SessionEnded || s.EndReason != "failed" {
		t.Errorf("the killed session: %+v, want ended, failed", s)
	}
	events, err := e.cat.ListEvents(ctx, catalog.EventFilter{Session: killedSession.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Kind != catalog.EventSessionEnd || events[0].ResultCode != string(errcode.Interrupted) {
		t.Errorf("audit events of the killed session: %+v", events)
	}
	for _, id := range []string{otherRun.ID, incognitoRun.ID} {
		if r, err := e.cat.GetRun(ctx, id); err != nil || r.Status != catalog.RunRunning {
			t.Errorf("run %s of another profile or incognito: %+v, %v; want it left running", id, r, err)
		}
	}
	for _, id := range []string{otherSession.ID, incognitoSession.ID} {
		if s, err := e.cat.GetSession(ctx, id); err != nil || s.State != catalog.SessionActive {
			t.Errorf("session %s of another profile or incognito: %+v, %v; want it left active", id, s, err)
		}
	}
	if r, err := e.cat.GetRun(ctx, res.RunID); err != nil || r.Status != catalog.RunOK {
		t.Errorf("the new run: %+v, %v", r, err)
	}
}

// TestLoginCheckSelectorTheBrowserRefuses: a login_check selector that
// passes the load-time check but that the browser refuses as CSS fails the
// run as invalid_action naming FILE:LINE and login_check, as a step's
// selector does, without the browser's JavaScript stack trace.
func TestLoginCheckSelectorTheBrowserRefuses(t *testing.T) {
	e := newEnv(t)
	w := e.wf(t, "name: lc\nprofile: null\nlogin_check:\n  url: SITE/account\n  login_wall_selector: '#1login'\nsteps:\n  - navigate: SITE/\n")
	_, err := e.run(t, w)
	if errcode.Of(err) != errcode.InvalidAction || errcode.ExitStatus(err) != 2 {
		t.Fatalf("got %v [%s], want invalid_action", err, errcode.Of(err))
	}
	want := w.File + ":3: login_check: \"#1login\" is not a valid CSS selector"
	if msg := err.Error(); msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	if h := errcode.HintOf(err); !strings.Contains(h, "login_wall_selector") {
		t.Errorf("hint %q does not name the field", h)
	}
}

// A run stopped (Ctrl-C) while its login check runs says so: the check has
// no verdict (not_run, not failed) and no snapshot was taken because the
// run was interrupted, not because the check did not pass.
func TestInterruptDuringLoginCheck(t *testing.T) {
	e := newEnv(t)
	w := e.wf(t, "name: lc\nprofile: web\nrestore: none\nlogin_check:\n  url: SITE/slow?ms=5000\n  logged_in_selector: '#in'\nsteps:\n  - navigate: SITE/\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := *e.runner
	r.Progress = func(ev ProgressEvent) {
		if ev.Stage == "login_check" && !ev.Done {
			cancel()
		}
	}
	res, err := r.Run(ctx, w)
	if errcode.Of(err) != errcode.Interrupted {
		t.Fatalf("got %v [%s], want interrupted", err, errcode.Of(err))
	}
	if res.LoginCheck != "not_run" || res.SnapshotSkipped != "run interrupted" {
		t.Fatalf("login_check %q, snapshot_skipped %q", res.LoginCheck, res.SnapshotSkipped)
	}
}

// A navigate that runs out of time is retried as a navigate: each attempt
// times out, none is aborted by the page the one before left loading
// (net::ERR_ABORTED, internal_error on the second attempt).
func TestNavigateRetriesAfterTimeout(t *testing.T) {
	e := newEnv(t)
	w := e.wf(t, "name: slow\nprofile: null\nsteps:\n  - navigate: SITE/slow?ms=3000\n    timeout: 500ms\n    retries: 2\n")
	res, err := e.run(t, w)
	if errcode.Of(err) != errcode.Timeout {
		t.Fatalf("got %v [%s], want timeout", err, errcode.Of(err))
	}
	if len(res.Steps) != 1 || res.Steps[0].Attempts != 3 || res.Steps[0].Code != errcode.Timeout {
		t.Fatalf("steps %+v, want one step, 3 attempts, each timeout", res.Steps)
	}
}

// A login check whose page is not there (404) or whose site cannot be
// reached fails with the session's own error and hint, about the URL; only
// a selector the browser refuses gets login_check's selector hint.
func TestLoginCheckPageErrorsKeepTheirHint(t *testing.T) {
	e := newEnv(t)
	// A port nothing listens on: taken, then given back.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/account"
	l.Close()
	missing := e.site.At("/no-such-page")
	for _, c := range []struct {
		name, url string
		code      errcode.Code
		msgHas    string
		hintHas   string
	}{
		{"404", missing, errcode.InvalidAction, "login check: " + missing + " answered HTTP 404", "check login_check.url"},
		{"unreachable", closed, errcode.Timeout, "login check: cannot load " + closed, "check the URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := e.wf(t, "name: lc\nprofile: null\nlogin_check:\n  url: "+c.url+"\n  login_wall_selector: '#login'\nsteps:\n  - navigate: SITE/\n")
			_, err := e.run(t, w)
			if errcode.Of(err) != c.code || !strings.Contains(err.Error(), c.msgHas) {
				t.Fatalf("got %v [%s], want %s with %q", err, errcode.Of(err), c.code, c.msgHas)
			}
			if h := errcode.HintOf(err); !strings.Contains(h, c.hintHas) || strings.Contains(h, "selector") {
				t.Errorf("hint %q: want %q, and nothing about selectors", h, c.hintHas)
			}
		})
	}
}

// TestUnencryptedRemoteSnapshotRefusedUpFront: a workflow that would
// snapshot into a remote store without encryption fails before the
// restore and the launch (invalid_input, exit 2), not after the whole run;
// one that never snapshots runs.
func TestUnencryptedRemoteSnapshotRefusedUpFront(t *testing.T) {
	e := newEnv(t)
	srv := s3test.Start(t)
	st, err := storage.Open(context.Background(), srv.StoreURL("snaps"), storage.Options{AWSAccessKeyID: srv.AccessKey, AWSSecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	e.m.Store = st
	launched := e.countLaunches()
	for _, c := range []struct {
		name, src string
		code      errcode.Code
		launches  int
	}{
		{"on success", "snapshot: on_success\n" + loginCheckYAML + "steps:\n  - navigate: SITE/\n", errcode.InvalidInput, 0},
		{"a snapshot step", "snapshot: never\n" + loginCheckYAML + "steps:\n  - navigate: SITE/\n  - snapshot:\n", errcode.InvalidInput, 0},
		{"never", "snapshot: never\nrestore: none\nsteps:\n  - navigate: SITE/\n", "", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			*launched = 0
			res, err := e.run(t, e.wf(t, "name: up\nprofile: remote\n"+c.src))
			if errcode.Of(err) != c.code || *launched != c.launches {
				t.Fatalf("got %v [%s] after %d launches, want %q after %d", err, errcode.Of(err), *launched, c.code, c.launches)
			}
			if c.code == "" {
				return
			}
			if errcode.ExitStatus(err) != 2 || !strings.Contains(errcode.HintOf(err), "DIRECTOR_AGE_RECIPIENTS") || res.RestoredID != "" {
				t.Errorf("exit %d, hint %q, restored %q", errcode.ExitStatus(err), errcode.HintOf(err), res.RestoredID)
			}
			if _, err := os.Stat(e.m.Dir("remote")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused run created the profile (%v)", err)
			}
		})
	}
}

// refusingStore is a store whose uploads fail, as a store that is down for
// writes; reads still work.
type refusingStore struct{ storage.Store }

func (refusingStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return errcode.New(errcode.StorageUnavailable, "test store refuses uploads")
}

// TestRunKeepsLoginWhoseSnapshotFailed: a refresh proves the login (and the
// site sets a new cookie, as sites that rotate their tokens do), but its
// snapshot fails. The next refresh must not restore the older snapshot over
// that profile (it did, and the newest login was lost): it keeps the local
// profile, says so, and snapshots it. A run whose login check failed sets
// no such mark, so the next one restores as usual.
func TestRunKeepsLoginWhoseSnapshotFailed(t *testing.T) {
	tests := []struct {
		name       string
		secondStep string // the step of the run whose snapshot fails
		wantKept   bool
	}{
		{name: "login check passed", secondStep: "navigate: SITE/setcookie?name=rotated&value=v2&max_age=3600", wantKept: true},
		{name: "logged out", secondStep: "navigate: SITE/logout", wantKept: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			res, err := e.run(t, e.wf(t, loginWF))
			mustOK(t, res, err)
			first := res.SnapshotID

			good := e.m.Store
			e.m.Store = refusingStore{good}
			e.m.InsecureNoEncryption = true // the wrapper is not the local file store
			res, err = e.run(t, e.wf(t, `name: refresh
profile: web
`+loginCheckYAML+`steps:
  - `+tc.secondStep+`
`))
			if errcode.Of(err) == errcode.InvalidInput || err == nil || res.SnapshotID != "" {
				t.Fatalf("the run with a refusing store: %v, %+v", err, res)
			}
			e.m.Store = good

			res, err = e.run(t, e.wf(t, `name: refresh
profile: web
snapshot: never
steps:
  - navigate: SITE/cookies
  - extract: {selector: "#cookies", as: cookies}
`))
			mustOK(t, res, err)
			cookies, _ := res.Outputs["cookies"].(string)
			if tc.wantKept {
				if res.KeptLocal == "" || res.RestoredID != "" || !strings.Contains(cookies, `"rotated":"v2"`) {
					t.Fatalf("kept %q, restored %q, cookies %s: want the local profile with the rotated cookie", res.KeptLocal, res.RestoredID, cookies)
				}
			} else if res.KeptLocal != "" || res.RestoredID != first {
				t.Fatalf("kept %q, restored %q: want snapshot %s restored", res.KeptLocal, res.RestoredID, first)
			}
		})
	}
}

// TestHumanRequiredMessage: the error speaks of a kept snapshot only when
// the profile may have one; a first refresh, before any login was
// snapshotted, said "the latest good snapshot is kept" too.
func TestHumanRequiredMessage(t *testing.T) {
	cause := errcode.New(errcode.HumanRequired, "login wall")
	cases := []struct {
		name    string
		restore string
		res     Result
		want    string
	}{
		{"restored", RestoreLatest, Result{RestoredID: "web-1"}, "(the latest good snapshot is kept)"},
		{"kept the local profile", RestoreLatest, Result{KeptLocal: "not restored: …"}, "(the latest good snapshot is kept)"},
		{"no snapshot yet", RestoreLatest, Result{}, "(it has no snapshot yet)"},
		{"restore: none", RestoreNone, Result{}, "(the latest good snapshot is kept)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &Workflow{Name: "refresh", Profile: "web", Restore: c.restore}
			err := (&Runner{}).humanRequired(w, &c.res, cause)
			if msg := err.Error(); !strings.Contains(msg, "profile web needs a human "+c.want) {
				t.Errorf("message %q, want %q", msg, c.want)
			}
		})
	}
}

// stallingBrowser is a real Chrome that, when stall is set, is stopped
// (SIGSTOP) as its close begins, so that it never answers Browser.close
// and the launcher has to kill it: a hung or starved Chrome.
type stallingBrowser struct {
	session.Browser
	stall *atomic.Bool
}

func (b stallingBrowser) Close(ctx context.Context) error {
	if b.stall.CompareAndSwap(true, false) {
		_ = syscall.Kill(b.Browser.(interface{ PID() int }).PID(), syscall.SIGSTOP)
	}
	return b.Browser.Close(ctx)
}

func (b stallingBrowser) Killed() bool { return b.Browser.(interface{ Killed() bool }).Killed() }

// TestChromeKilledAtCloseIsNotSnapshotted: a Chrome that had to be killed
// at the close may not have written the login the check just proved, so
// neither the run's snapshot nor a snapshot step trusts that profile: the
// run fails with timeout, the latest good snapshot stays latest, and
// nothing is taken. Before, the run said ok and snapshotted it.
func TestChromeKilledAtCloseIsNotSnapshotted(t *testing.T) {
	e := newEnv(t)
	e.runner.Launch = ChromeLauncher(ChromeOptions{ChromePath: chromePath(t), ExtraFlags: e.site.ChromeFlags(), CloseTimeout: time.Second})
	launch := e.runner.Launch
	var stall atomic.Bool
	e.runner.Launch = func(ctx context.Context, o LaunchOptions) (session.Browser, error) {
		b, err := launch(ctx, o)
		if err != nil {
			return nil, err
		}
		return stallingBrowser{Browser: b, stall: &stall}, nil
	}
	good, err := e.run(t, e.wf(t, loginWF))
	mustOK(t, good, err)

	for _, c := range []struct{ name, steps string }{
		{"at the end of the run", "  - navigate: SITE/account\n"},
		{"in a snapshot step", "  - navigate: SITE/account\n  - snapshot: {note: mid}\n  - navigate: SITE/widgets\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stall.Store(true)
			res, err := e.run(t, e.wf(t, "name: refresh\nprofile: web\nsnapshot: on_success\n"+loginCheckYAML+"steps:\n"+c.steps))
			if errcode.Of(err) != errcode.Timeout || !errors.Is(err, session.ErrKilledAtClose) {
				t.Fatalf("got %v [%s], want timeout with ErrKilledAtClose", err, errcode.Of(err))
			}
			if res.SnapshotID != "" || slices.ContainsFunc(res.Steps, func(s StepResult) bool { return s.SnapshotID != "" }) {
				t.Fatalf("a snapshot was taken: %+v", res)
			}
			snaps, err := e.m.Snapshots(context.Background(), "web")
			if err != nil || len(snaps) != 1 || snaps[0].ID != good.SnapshotID {
				t.Fatalf("snapshots %+v (%v), want only the good one %s", snaps, err, good.SnapshotID)
			}
		})
	}
}

// TestRunOnUnmountedStore: a file store whose folder is gone (a disk not
// mounted) while the catalog lists the profile's snapshots is
// storage_unavailable before Chrome starts, not "no snapshot yet", which
// ran on an empty profile and asked for a human.
func TestRunOnUnmountedStore(t *testing.T) {
	e := newEnv(t)
	good, err := e.run(t, e.wf(t, loginWF))
	mustOK(t, good, err)
	store := filepath.Join(e.home, "snapshots")
	if err := os.Rename(store, store+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(e.m.Dir("web")); err != nil {
		t.Fatal(err)
	}
	launched := e.countLaunches()
	_, err = e.runner.Run(context.Background(), e.wf(t, "name: refresh\nprofile: web\n"+loginCheckYAML+"steps:\n  - navigate: SITE/account\n"))
	if errcode.Of(err) != errcode.StorageUnavailable || *launched != 0 || !strings.Contains(errcode.HintOf(err), "mount it") {
		t.Fatalf("got %v [%s] (hint %q) after %d launches, want storage_unavailable before any", err, errcode.Of(err), errcode.HintOf(err), *launched)
	}
}

// TestChromeCrashMidAction: Chrome killed while a step or the login check
// waits on a slow page is the browser's crash (browser_crashed, its hint,
// no verdict from the check), not "context canceled" as an internal error
// and a "run interrupted" that nobody interrupted.
func TestChromeCrashMidAction(t *testing.T) {
	e := newEnv(t)
	launch := e.runner.Launch
	var pid atomic.Int64
	e.runner.Launch = func(ctx context.Context, o LaunchOptions) (session.Browser, error) {
		b, err := launch(ctx, o)
		if err == nil {
			pid.Store(int64(b.(interface{ PID() int }).PID()))
		}
		return b, err
	}
	kill := func() { _ = syscall.Kill(int(pid.Load()), syscall.SIGKILL) }
	for _, c := range []struct {
		name, src, check string
		at               func(ProgressEvent) bool
	}{
		{"in a step", "name: crash\nprofile: web\nrestore: none\n" + loginCheckYAML + "steps:\n  - navigate: SITE/slow?ms=20000\n    timeout: 60s\n",
			"not_run", func(ev ProgressEvent) bool { return ev.Stage == "step" && !ev.Done }},
		{"in the login check", "name: crash\nprofile: web\nrestore: none\nlogin_check:\n  url: SITE/slow?ms=20000\n  logged_in_selector: '#in'\nbrowser: {timeout: 60s}\nsteps:\n  - navigate: SITE/\n",
			"not_run", func(ev ProgressEvent) bool { return ev.Stage == "login_check" && !ev.Done }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.runner.Progress = func(ev ProgressEvent) {
				if c.at(ev) {
					time.AfterFunc(700*time.Millisecond, kill)
				}
			}
			res, err := e.run(t, e.wf(t, c.src))
			if !errors.Is(err, session.ErrBrowserExited) || errcode.HintOf(err) == "" || strings.Contains(err.Error(), "context canceled") {
				t.Fatalf("got %v [%s] (hint %q), want the browser's exit", err, errcode.Of(err), errcode.HintOf(err))
			}
			if res.EndReason != string(session.EndBrowserCrashed) || res.LoginCheck != c.check ||
				res.SnapshotSkipped != "the browser exited unexpectedly" || res.SnapshotID != "" {
				t.Fatalf("end %q, login_check %q, snapshot_skipped %q, snapshot %q", res.EndReason, res.LoginCheck, res.SnapshotSkipped, res.SnapshotID)
			}
		})
	}
}

// TestRunThatCouldNotRestoreItsOwnSnapshot: a run that restores the latest
// snapshot and snapshots again, encrypting only to keys this machine's
// identity is not one of (a key rotation half done), is refused before it
// starts: its snapshot would be the latest, and every later run would fail
// with decrypt_failed. Before, the first run passed and the next failed.
func TestRunThatCouldNotRestoreItsOwnSnapshot(t *testing.T) {
	e := newEnv(t)
	mine, _ := age.GenerateX25519Identity()
	other, _ := age.GenerateX25519Identity()
	e.m.Identities = []age.Identity{mine}
	launched := e.countLaunches()
	for _, c := range []struct {
		name    string
		rs      []age.Recipient
		restore string
		code    errcode.Code
	}{
		{"to another key only", []age.Recipient{other.Recipient()}, "latest", errcode.InvalidInput},
		{"to another key and mine", []age.Recipient{other.Recipient(), mine.Recipient()}, "latest", ""},
		{"to another key, no restore", []age.Recipient{other.Recipient()}, "none", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.m.Recipients, *launched = c.rs, 0
			_, err := e.runner.Run(context.Background(), e.wf(t, "name: refresh\nprofile: web\nrestore: "+c.restore+"\n"+loginCheckYAML+"steps:\n  - navigate: SITE/\n"))
			if c.code == "" {
				if errcode.Of(err) == errcode.InvalidInput {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if errcode.Of(err) != c.code || *launched != 0 || !strings.Contains(errcode.HintOf(err), "director key recipient") {
				t.Fatalf("got %v [%s] (hint %q) after %d launches, want %s before any", err, errcode.Of(err), errcode.HintOf(err), *launched, c.code)
			}
		})
	}
}

// countLaunches makes the runner count the browsers it launches, and
// returns the count.
func (e *env4) countLaunches() *int {
	launch := e.runner.Launch
	n := new(int)
	e.runner.Launch = func(ctx context.Context, o LaunchOptions) (session.Browser, error) {
		*n++
		return launch(ctx, o)
	}
	return n
}
