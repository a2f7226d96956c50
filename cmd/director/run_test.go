package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"director/catalog"
	"director/encrypt"
	"director/errcode"
	"director/internal/testenv"
	"director/internal/testsite"
	"director/launcher"
	"director/workflows"
)

// firstJSON decodes the first JSON object on stdout.
func firstJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.NewDecoder(strings.NewReader(s)).Decode(&m); err != nil {
		t.Fatalf("no JSON object: %v\n%s", err, s)
	}
	return m
}

func writeWF(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunInvalidWorkflow(t *testing.T) {
	home := cliEnv(t)
	p := writeWF(t, t.TempDir(), "bad.yaml", "name: x\nprofile: p\nsteps:\n  - clik: '#a'\n")
	code, out, _ := runDirector(t, "--home", home, "run", p, "--json")
	m := firstJSON(t, out)
	e, _ := m["error"].(map[string]any)
	if code != 2 || e["code"] != "invalid_action" || !strings.Contains(e["message"].(string), p+":4:") {
		t.Fatalf("exit %d: %s", code, out)
	}
	code, _, errOut := runDirector(t, "--home", home, "run", p, "--var", "bad name=1")
	if code != 2 || !strings.Contains(errOut, "[invalid_action]") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// A --var the workflow neither declares nor uses (a typo) is refused,
	// before anything is locked or launched.
	typo := writeWF(t, t.TempDir(), "typo.yaml", "name: x\nprofile: p\nvars: {password: pw}\nsteps:\n  - navigate: http://h/${vars.site}\n")
	code, out, errOut = runDirector(t, "--home", home, "run", typo, "--var", "pasword=hunter22", "--var", "site=http://i")
	if code != 2 || out != "" || !strings.Contains(errOut, "--var pasword: workflow "+typo+" has no var pasword (its vars: password, site) [invalid_input]") ||
		strings.Contains(errOut, "hunter22") {
		t.Fatalf("misspelt --var: exit %d: %s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, "director.db")); err == nil {
		t.Errorf("a refused --var created the catalog")
	}
	code, _, errOut = runDirector(t, "--home", home, "run")
	if code != 2 || !strings.Contains(errOut, "[invalid_input]") {
		t.Fatalf("no file: exit %d: %s", code, errOut)
	}
	// A directory is named as one, not blamed on permissions.
	adir := filepath.Join(t.TempDir(), "adir.yaml")
	if err := os.Mkdir(adir, 0o700); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runDirector(t, "--home", home, "run", adir)
	if code != 2 || !strings.Contains(errOut, "is a directory, not a file [invalid_input]; hint: give the workflow's YAML file") || strings.Contains(errOut, "permissions") {
		t.Fatalf("a directory: exit %d: %s", code, errOut)
	}
}

// TestRunRefusedRestoreResult: a run whose restore fails reports it as a
// run's result (status failed, the error, no steps), as text and as the
// --json object, whether or not the home has a catalog yet. On a home
// without one, where director checks the restore before it creates the
// catalog, it printed a plain error object instead.
func TestRunRefusedRestoreResult(t *testing.T) {
	for _, withCatalog := range []bool{false, true} {
		t.Run(map[bool]string{false: "fresh home", true: "home with a catalog"}[withCatalog], func(t *testing.T) {
			home := cliEnv(t)
			t.Setenv("CHROME_PATH", os.Args[0]) // found; never started
			if withCatalog {
				if code, _, errOut := runDirector(t, "--home", home, "profile", "create", "other"); code != 0 {
					t.Fatalf("create: %d %s", code, errOut)
				}
			}
			p := writeWF(t, t.TempDir(), "pinned.yaml",
				"name: pinned\nprofile: work\nrestore: work-20261101T000000Z-abcd\nsteps:\n  - navigate: http://127.0.0.1:1/\n")
			code, out, errOut := runDirector(t, "--home", home, "--json", "run", p)
			m := firstJSON(t, out)
			e, _ := m["error"].(map[string]any)
			if code != 1 || m["status"] != "failed" || m["workflow"] != "pinned" || m["profile"] != "work" || e["code"] != "snapshot_not_found" {
				t.Fatalf("exit %d, want 1 and a failed run's result:\n%s%s", code, out, errOut)
			}
			if _, ok := m["steps"].([]any); !ok {
				t.Errorf("no steps list in the result:\n%s", out)
			}
			code, out, errOut = runDirector(t, "--home", home, "run", p)
			if code != 1 || !strings.HasPrefix(out, "failed: workflow pinned on profile work") || !strings.Contains(errOut, "[snapshot_not_found]") {
				t.Errorf("text: exit %d:\n%s%s", code, out, errOut)
			}
		})
	}
}

// TestRunRefusedBeforeItStarts: settings that would refuse the run's
// snapshot (an unencrypted one to a remote store; recipients that leave
// out this machine's identity, when it also restores) refuse the run
// before it starts, as docs/workflows.md says of a run that never starts:
// the plain error object under --json, the one error line without, exit 2,
// and no catalog made in a fresh home. They printed a failed run's result
// ("status":"failed", "login_check":"not_run"; "failed: workflow … in 0s").
func TestRunRefusedBeforeItStarts(t *testing.T) {
	check := "login_check: {url: 'http://127.0.0.1:1/account', logged_in_selector: '#me'}\n"
	other, err := encrypt.Generate(filepath.Join(t.TempDir(), "other.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		policy  string
		env     map[string]string
		args    []string
		keyed   bool // the home holds an identity (key generate)
		message string
	}{
		{"unencrypted snapshot to a remote store", "restore: none\n",
			map[string]string{"AWS_ACCESS_KEY_ID": "dummy", "AWS_SECRET_ACCESS_KEY": "dummy"},
			[]string{"--store", "s3://bkt?endpoint=127.0.0.1:9&insecure=true"}, false, "refusing to upload an unencrypted profile"},
		{"own identity not among the recipients", "",
			map[string]string{encrypt.EnvRecipients: other}, nil, true, "identity is not among the recipients"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := cliEnv(t)
			t.Setenv("CHROME_PATH", os.Args[0]) // found; never started
			if c.keyed {
				if code, _, errOut := runDirector(t, "--home", home, "key", "generate"); code != 0 {
					t.Fatalf("key generate: %d %s", code, errOut)
				}
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			p := writeWF(t, t.TempDir(), "refresh.yaml", "name: refresh\nprofile: work\n"+c.policy+check+"steps:\n  - navigate: http://127.0.0.1:1/\n")
			args := append([]string{"--home", home}, c.args...)
			code, out, errOut := runDirector(t, append(args, "--json", "run", p)...)
			m := firstJSON(t, out)
			e, _ := m["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if code != errcode.ExitUsage || m["status"] != "error" || e["code"] != "invalid_input" || !strings.Contains(msg, c.message) {
				t.Fatalf("--json: exit %d:\n%s%s\nwant exit 2 and {\"status\":\"error\",\"error\":{\"code\":\"invalid_input\"…}}", code, out, errOut)
			}
			for _, k := range []string{"workflow", "login_check", "steps", "durations"} {
				if _, ok := m[k]; ok {
					t.Errorf("--json: a run's field %q in the error object of a run that never started:\n%s", k, out)
				}
			}
			code, out, errOut = runDirector(t, append(args, "run", p)...)
			if code != errcode.ExitUsage || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.message) || !strings.Contains(errOut, "[invalid_input]") {
				t.Errorf("text: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, the error line on stderr", code, out, errOut)
			}
			if _, err := os.Stat(filepath.Join(home, "director.db")); err == nil {
				t.Errorf("a run refused before it started created the catalog")
			}
		})
	}
}

func TestRunCommand(t *testing.T) {
	needChrome(t)
	home := cliEnv(t)
	site := testsite.New(t)
	dir := t.TempDir()
	d := func(args ...string) (int, string, string) {
		return runDirector(t, append([]string{"--home", home}, args...)...)
	}

	// An incognito run with --var, outputs and a screenshot.
	ok := writeWF(t, dir, "ok.yaml", `name: widgets
profile: null
vars: {who: nobody}
steps:
  - navigate: `+site.At("/widgets")+`
  - type: {selector: "#name", text: "${vars.who}"}
  - click: "#go"
  - extract: {selector: "#out", as: out}
  - screenshot: page.png
`)
	arts := filepath.Join(dir, "arts")
	code, out, errOut := d("run", ok, "--var", "who=ann,bob", "--json", "--artifacts", arts)
	m := firstJSON(t, out)
	if code != 0 || m["status"] != "ok" {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if m["outputs"].(map[string]any)["out"] != "Hello ann,bob (red)" {
		t.Fatalf("outputs: %v", m["outputs"])
	}
	if a := m["artifacts"].([]any); len(a) != 1 || a[0] != filepath.Join(arts, "page.png") {
		t.Fatalf("artifacts: %v", m["artifacts"])
	}
	sessionID := m["session_id"].(string)

	// Text mode, without --artifacts: the screenshot goes to a new
	// directory under <home>/artifacts, named after the time and the
	// workflow, not into the temp dir, and the output says where.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, out, _ = d("run", ok)
	if code != 0 || !strings.Contains(out, "ok: workflow widgets on incognito") || !strings.Contains(out, "out = Hello nobody (red)") {
		t.Fatalf("text: exit %d %s", code, out)
	}
	shots, _ := filepath.Glob(filepath.Join(home, "artifacts", "*-widgets-*", "page.png"))
	if len(shots) != 1 || !strings.Contains(out, "artifact "+shots[0]+"\n") || !strings.Contains(out, "artifacts in "+filepath.Dir(shots[0])+"\n") {
		t.Fatalf("text: screenshots %v, output %s", shots, out)
	}
	if stray, _ := filepath.Glob(filepath.Join(tmp, "director-artifacts-*")); len(stray) != 0 {
		t.Fatalf("screenshots in the temp dir: %v", stray)
	}
	// --quiet --json (cron): the result names the directory.
	code, out, errOut = d("--quiet", "run", ok, "--json")
	m = firstJSON(t, out)
	artsDir, _ := m["artifacts_dir"].(string)
	if code != 0 || errOut != "" || !strings.HasPrefix(artsDir, filepath.Join(home, "artifacts")+string(filepath.Separator)) {
		t.Fatalf("quiet json: exit %d, artifacts_dir %q, stderr %q", code, artsDir, errOut)
	}

	// A link to a blocked domain: exit 4.
	blocked := writeWF(t, dir, "blocked.yaml", `name: blocked
profile: null
session: {blocklist: [localhost]}
steps:
  - navigate: `+site.At("/links")+`
  - click: "#localhost-link"
  - wait_for: "#host"
`)
	code, out, _ = d("run", blocked, "--json")
	m = firstJSON(t, out)
	if code != 4 || m["status"] != "domain_blocked" || m["failed_step"] == nil {
		t.Fatalf("blocked: exit %d %s", code, out)
	}
	// In text mode the error is the one line on stderr.
	code, _, errOut = d("run", blocked)
	if lines := strings.Split(strings.TrimSpace(errOut), "\n"); code != 4 || len(lines) != 1 || !strings.Contains(lines[0], "[domain_blocked]") {
		t.Fatalf("blocked, text: exit %d, stderr:\n%s\nwant one line with the error", code, errOut)
	}

	// A logged-out profile: exit 3 with the command to log in again, no
	// snapshot. The command names this run's home, which is not the
	// default: pasted without it, it would log in to another home's profile.
	refresh := writeWF(t, dir, "refresh.yaml", `name: refresh
profile: web
login_check:
  url: `+site.At("/account")+`
  logged_in_selector: "#whoami"
  login_wall_selector: form#login
steps:
  - navigate: `+site.At("/")+`
`)
	code, out, _ = d("run", refresh, "--json")
	m = firstJSON(t, out)
	e, _ := m["error"].(map[string]any)
	if code != 3 || m["status"] != "human_required" || m["snapshot_id"] != nil ||
		!strings.Contains(e["hint"].(string), "director --home "+home+" profile open web --url "+site.At("/account")+" --snapshot") {
		t.Fatalf("refresh: exit %d %s", code, out)
	}

	// The audit log, newest first, filtered by session.
	code, out, _ = d("audit", "--session", sessionID, "--json")
	m = decodeJSON(t, out)
	evs := m["events"].([]any)
	if code != 0 || len(evs) < 6 {
		t.Fatalf("audit: exit %d %s", code, out)
	}
	first, last := evs[0].(map[string]any), evs[len(evs)-1].(map[string]any)
	if first["kind"] != "session_end" || last["kind"] != "session_start" {
		t.Fatalf("audit order: %v ... %v", first, last)
	}
	for _, ev := range evs {
		if b, _ := json.Marshal(ev); strings.Contains(string(b), "ann,bob") {
			t.Fatalf("typed text in the audit log: %v", ev)
		}
	}
	code, out, _ = d("audit", "--profile", "web", "--limit", "1")
	if code != 0 || !strings.Contains(out, "session_end") || strings.Count(out, "\n") != 2 {
		t.Fatalf("audit text: exit %d %q", code, out)
	}
}

// TestRunChromeArguments: a --chrome that cannot run fails the run as
// browser_launch_failed before the profile is touched, --force reaches the
// restore's downgrade check, and --keep cannot be negative.
func TestRunChromeArguments(t *testing.T) {
	home := withProfile(t) // profile "work"
	if err := os.WriteFile(filepath.Join(home, "browser-profiles", "work", "Last Version"), []byte("120.0.6099.71"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runDirector(t, "--home", home, "profile", "snapshot", "work"); code != 0 {
		t.Fatalf("snapshot: %d %s", code, errOut)
	}
	bin := t.TempDir()
	old := filepath.Join(bin, "old-chrome") // answers --version with an older Chrome, and cannot browse
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho 'Chromium 100.0.0.0'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	wfDir := t.TempDir()
	wf := writeWF(t, wfDir, "wf.yaml", "name: x\nprofile: work\nsteps:\n  - navigate: http://127.0.0.1:1/\n")
	headedWF := writeWF(t, wfDir, "headed.yaml", "name: x\nprofile: work\nbrowser: {headless: false}\nsteps:\n  - navigate: http://127.0.0.1:1/\n")
	noDisplay := map[string]string{"DISPLAY": "", "WAYLAND_DISPLAY": ""}
	cases := []struct {
		name     string
		args     []string
		code     int
		errCode  string
		hint     string // in the hint
		noHint   string // not in the hint
		restored bool   // the profile was replaced by the snapshot
		env      map[string]string
		wf       string // the workflow, when not wf
		msg      string // in the message
	}{
		// A headed run without a display fails before the restore, saying
		// so, not with Chrome's "Missing X server" output.
		{"headed without a display", []string{"--chrome", old, "--headed"}, 1, "browser_launch_failed", "drop --headed", "--no-sandbox", false, noDisplay, "", "no display to show Chrome on"},
		{"workflow headed without a display", []string{"--chrome", old}, 1, "browser_launch_failed", "pass --headless", "--no-sandbox", false, noDisplay, headedWF, "no display to show Chrome on"},
		// Bad run flags fail before the restore and the launch, as invalid input.
		{"artifacts a file", []string{"--artifacts", wf}, 2, "invalid_input", "give a directory", "", false, nil, "", "is a file, not a directory"},
		{"artifacts cannot be created", []string{"--artifacts", "/proc/nope/arts"}, 2, "invalid_input", "give a directory you can create", "", false, nil, "", "cannot create the directory"},
		{"cdp-url not a URL", []string{"--cdp-url", "notaurl"}, 2, "invalid_input", "http://127.0.0.1:9222", "", false, nil, "", "not a URL with a host"},
		{"cdp-url of another scheme", []string{"--cdp-url", "ftp://127.0.0.1:9222"}, 2, "invalid_input", "ws://127.0.0.1:9222/devtools/browser/ID", "", false, nil, "", "scheme must be"},
		{"missing chrome", []string{"--chrome", filepath.Join(bin, "nope")}, 1, "browser_launch_failed", "unset it", "--force", false, nil, "", ""},
		{"chrome without a version", []string{"--chrome", "/bin/true"}, 1, "browser_launch_failed", "unset it to search PATH", "--force", false, nil, "", ""},
		{"older chrome", []string{"--chrome", old}, 2, "invalid_input", "--force", "", false, nil, "", ""},
		{"older chrome, forced", []string{"--chrome", old, "--force"}, 1, "browser_launch_failed", "", "", true, nil, "", ""},
		{"negative keep", []string{"--keep", "-1"}, 2, "invalid_input", "pass 0", "", false, nil, "", ""},
	}
	marker := filepath.Join(home, "browser-profiles", "work", "marker")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			if err := os.WriteFile(marker, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			file := wf
			if c.wf != "" {
				file = c.wf
			}
			code, out, _ := runDirector(t, append([]string{"--home", home, "--json", "run", file}, c.args...)...)
			m := firstJSON(t, out)
			e, _ := m["error"].(map[string]any)
			if code != c.code || e["code"] != c.errCode {
				t.Fatalf("exit %d, want %d and %s: %s", code, c.code, c.errCode, out)
			}
			if msg, _ := e["message"].(string); !strings.Contains(msg, c.msg) {
				t.Errorf("message %q: want %q", msg, c.msg)
			}
			hint, _ := e["hint"].(string)
			if !strings.Contains(hint, c.hint) || (c.noHint != "" && strings.Contains(hint, c.noHint)) {
				t.Errorf("hint %q: want %q and not %q", hint, c.hint, c.noHint)
			}
			if _, err := os.Stat(marker); (err != nil) != c.restored {
				t.Errorf("profile restored = %v, want %v", err != nil, c.restored)
			}
		})
	}
}

// remoteChrome starts a headless Chromium with a DevTools port, as a user's
// own browser for --cdp-url, and returns its http:// address. The cleanup
// stops its whole process group.
func remoteChrome(t *testing.T) string {
	t.Helper()
	chrome, err := launcher.Find("")
	testenv.Require(t, "Chromium", err)
	dir := t.TempDir()
	cmd := exec.Command(chrome, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir="+dir,
		"--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		_, _ = launcher.CleanRuntimeFiles(dir)
	})
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort")); err == nil {
			if port, _, ok := strings.Cut(string(b), "\n"); ok && port != "" {
				return "http://127.0.0.1:" + port
			}
		}
		select {
		case <-exited:
			t.Fatal("the remote Chromium exited before it wrote DevToolsActivePort")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestRunCDPURLQuiet: a --cdp-url run on a profile says once, in its result,
// that the remote browser keeps its own profile; --quiet and --json print
// nothing on stderr for it, and a failure is the one error line.
func TestRunCDPURLQuiet(t *testing.T) {
	needChrome(t)
	home := cliEnv(t)
	site := testsite.New(t)
	cdp := remoteChrome(t)
	dir := t.TempDir()
	ok := writeWF(t, dir, "ok.yaml", "name: ok\nprofile: web\nsteps:\n  - navigate: "+site.At("/")+"\n")
	bad := writeWF(t, dir, "bad.yaml", "name: bad\nprofile: web\nbrowser: {timeout: 1s}\nsteps:\n  - navigate: "+site.At("/")+"\n  - click: '#nothing-here'\n")
	const note = "the remote browser keeps its own profile; not restoring or snapshotting web"
	cases := []struct {
		name        string
		args        []string
		code        int
		stdoutHas   string // "" for an empty stdout
		stderrLines int
	}{
		{"quiet", []string{"--quiet", "run", ok}, 0, "", 0},
		{"json", []string{"--json", "run", ok}, 0, `"notes": [`, 0},
		{"text", []string{"run", ok}, 0, "note: --cdp-url: " + note, 0},
		{"quiet failure", []string{"--quiet", "run", bad}, 1, "", 1},
		{"text failure", []string{"run", bad}, 1, "note: --cdp-url: " + note, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runDirector(t, append([]string{"--home", home}, append(c.args, "--cdp-url", cdp)...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, out, errOut)
			}
			if c.stdoutHas == "" && out != "" || !strings.Contains(out, c.stdoutHas) {
				t.Errorf("stdout %q, want %q", out, c.stdoutHas)
			}
			if c.stdoutHas != "" && !strings.Contains(out, note) {
				t.Errorf("stdout lacks the note %q:\n%s", note, out)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if errOut == "" {
				lines = nil
			}
			if len(lines) != c.stderrLines || strings.Contains(errOut, "not restoring") {
				t.Errorf("stderr has %d lines, want %d, without the note:\n%s", len(lines), c.stderrLines, errOut)
			}
		})
	}
}

// TestRunHelpDefaults: run --help states the real defaults of its flags.
func TestRunHelpDefaults(t *testing.T) {
	code, out, errOut := runDirector(t, "run", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	cases := []struct {
		flag, want, not string
	}{
		{"--headless", "(default: the workflow's browser.headless, headless when it has none)", "(default: false)"},
		{"--headed", "(default: the workflow's browser.headless, headless when it has none)", "(default: false)"},
	}
	for _, c := range cases {
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), c.flag+" ") {
				line = l
			}
		}
		if !strings.Contains(line, c.want) || strings.Contains(line, c.not) {
			t.Errorf("help line %q: want %q, not %q", line, c.want, c.not)
		}
	}
}

// TestURLForLog: a --cdp-url is printed and logged without its query or
// user part, where a hosted browser's token sits; a refused one too.
func TestURLForLog(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ws://127.0.0.1:9222/devtools/browser/ab-12", `"ws://127.0.0.1:9222/devtools/browser/ab-12"`},
		{"wss://chrome.example.com/?token=SECRET", `"wss://chrome.example.com/?…"`},
		{"https://user:SECRET@chrome.example.com:443/json", `"https://…@chrome.example.com:443/json"`},
		{"notaurl", `"notaurl"`},
		{"mailto:SECRET", `"mailto:…"`},
		{"http://[::1", "(a URL that does not parse)"},
	} {
		if got := urlForLog(c.in); got != c.want {
			t.Errorf("urlForLog(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	home := cliEnv(t)
	wf := writeWF(t, t.TempDir(), "wf.yaml", "name: x\nprofile: work\nsteps:\n  - navigate: http://127.0.0.1:9/\n")
	code, out, errOut := runDirector(t, "--home", home, "--json", "run", wf, "--cdp-url", "ftp://u:SECRET@127.0.0.1:9222/x?token=SECRET")
	if code != 2 || strings.Contains(out+errOut, "SECRET") || !strings.Contains(out, "scheme must be") {
		t.Errorf("exit %d: %s %s", code, out, errOut)
	}
}

// TestKilledIncognitoRunIsClosed: an incognito `director run` killed with
// SIGKILL mid-step leaves its run running and its session active, and no
// profile lock ever proves it dead. The next `director run`, or `director
// audit`, finds that the run's process on this host is gone and closes it:
// failed, interrupted, its session ended with a session_end event. Both
// stayed open for ever.
func TestKilledIncognitoRunIsClosed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds Chrome through /proc")
	}
	needChrome(t)
	site := testsite.New(t)
	cases := []struct {
		name  string
		sweep func(t *testing.T, home, dir string)
	}{
		{"by the next run", func(t *testing.T, home, dir string) {
			next := writeWF(t, dir, "next.yaml", "name: next\nprofile: null\nsteps:\n  - navigate: "+site.At("/")+"\n")
			if code, out, errOut := runDirector(t, "--home", home, "run", next); code != 0 {
				t.Fatalf("next run: exit %d: %s %s", code, out, errOut)
			}
		}},
		{"by audit", func(t *testing.T, home, _ string) {
			if code, out, errOut := runDirector(t, "--home", home, "audit"); code != 0 {
				t.Fatalf("audit: exit %d: %s %s", code, out, errOut)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home, dir := cliEnv(t), t.TempDir()
			// A short TMPDIR for the incognito profile: Chrome refuses a
			// SingletonSocket path longer than a Unix socket's (t.TempDir's
			// are, with the test's name in them).
			tmp, err := os.MkdirTemp("", "dkr")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			addr, requested, _ := hungStore(t) // a page that never loads
			wf := writeWF(t, dir, "hang.yaml", `name: hang
profile: null
browser: {headless: true, timeout: 1h}
session: {idle_timeout: 1h, max_duration: 2h}
steps:
  - navigate: http://`+addr+`/
`)
			cmd := exec.Command(os.Args[0], "--home", home, "run", wf)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			chrome := 0
			t.Cleanup(func() { // after director's end (cleanups run last first)
				if chrome != 0 {
					_ = syscall.Kill(-chrome, syscall.SIGKILL) // its own process group
				}
			})
			p := startMain(t, cmd, stderr.String, "TMPDIR="+tmp)
			p.waitFor(t, requested, "Chrome asked for the page")
			if dirs, _ := filepath.Glob(filepath.Join(tmp, "director-incognito-*")); len(dirs) == 1 {
				chrome = chromeOf(cmd.Process.Pid, dirs[0])
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			p.exitCode(t, "SIGKILL")

			cat, err := catalog.Open(context.Background(), filepath.Join(home, "director.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer cat.Close()
			runs, err := cat.ListRuns(context.Background(), "", 0)
			if err != nil || len(runs) != 1 || runs[0].Status != catalog.RunRunning || runs[0].PID != cmd.Process.Pid {
				t.Fatalf("runs after the kill: %+v, %v; want the killed one, running, with its pid", runs, err)
			}
			killed := runs[0]
			sessions, err := cat.ListSessions(context.Background(), "", 0)
			if err != nil || len(sessions) != 1 || sessions[0].State != catalog.SessionActive {
				t.Fatalf("sessions after the kill: %+v, %v; want one active", sessions, err)
			}
			session := sessions[0]

			c.sweep(t, home, dir)

			if r, err := cat.GetRun(context.Background(), killed.ID); err != nil || r.Status != catalog.RunFailed || r.ErrorCode != string(errcode.Interrupted) || r.EndedAt.IsZero() {
				t.Errorf("the killed run: %+v, %v; want failed, interrupted, ended", r, err)
			}
			if s, err := cat.GetSession(context.Background(), session.ID); err != nil || s.State != catalog.SessionEnded || s.EndReason != "failed" {
				t.Errorf("the killed run's session: %+v, %v; want ended, failed", s, err)
			}
			code, out, _ := runDirector(t, "--home", home, "--json", "audit", "--session", session.ID)
			var res struct{ Events []catalog.Event }
			if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
				t.Fatalf("audit: exit %d %v: %s", code, err, out)
			}
			if len(res.Events) == 0 || res.Events[0].Kind != catalog.EventSessionEnd || res.Events[0].ResultCode != string(errcode.Interrupted) {
				t.Errorf("the killed session's newest event: %+v; want session_end, interrupted", res.Events)
			}
		})
	}
}

// TestRunErrorsCarryAHint: every error of a run's result has a hint, as
// every other command's: one whose own is empty (a run stopped during its
// restore or its snapshot) gets its code's.
func TestRunErrorsCarryAHint(t *testing.T) {
	for _, code := range []errcode.Code{errcode.Interrupted, errcode.StorageUnavailable, errcode.Internal} {
		var out strings.Builder
		g := &globals{JSON: true, Stdout: &out, Stderr: &out}
		res := &workflows.Result{Status: "error", Error: &workflows.ErrorInfo{Code: code, Message: "reading the archive cancelled: context canceled"}}
		_ = reportRun(g, res, errcode.New(code, "x"), nil)
		var got struct {
			Error struct{ Hint string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(out.String()), &got); err != nil || got.Error.Hint != defaultHints[code] {
			t.Errorf("%s: hint %q (%v), want %q", code, got.Error.Hint, err, defaultHints[code])
		}
	}
}
