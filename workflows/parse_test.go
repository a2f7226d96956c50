package workflows

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"director/errcode"
)

const good = `name: refresh
profile: work
restore: latest
snapshot: on_success
browser:
  headless: false
  viewport: {width: 1024, height: 700}
  timeout: 12s
session:
  idle_timeout: 30s
  max_duration: 5m
  blocklist: ["ads.example", "*.tracker.net"]
  allowlist: [example.com]
login_check:
  url: https://example.com/account
  logged_in_selector: "#whoami"
  login_wall_selector: form#login
vars:
  user: alice
  pass: ${env.PASS}
steps:
  - navigate: https://example.com/login
  - type: {selector: "#user", text: "${vars.user}"}
  - name: password
    type: {selector: "#pass", text: "${vars.pass}", clear: true}
    retries: 2
    timeout: 3s
  - press: Enter
  - select: {selector: "#color", value: 3}
  - click: "#go"
  - wait_for: "#later"
  - wait_for: {selector: "#spinner", state: hidden}
  - wait_for: {url: "*/account*"}
  - extract: {selector: "#whoami", as: who}
  - extract: {selector: "a", as: links, kind: list, attribute: href}
  - screenshot: {file: shots/a.png, full_page: true}
  - evaluate: {expression: "document.title", as: title}
  - assert: {text: "Welcome", url: "*/account"}
  - sleep: 250ms
  - open_tab: https://example.com/
  - switch_tab: t1
  - close_tab: t2
  - close_tab:
  - snapshot:
  - snapshot: {note: "mid run $${literal}"}
`

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseGood(t *testing.T) {
	w, err := Parse("good.yaml", []byte(good), LoadOptions{LookupEnv: env(map[string]string{"PASS": "s3cret"})})
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "refresh" || w.Profile != "work" || w.Incognito || w.Restore != "latest" || w.Snapshot != SnapshotOnSuccess {
		t.Fatalf("top: %+v", w)
	}
	if w.Browser.Headless == nil || *w.Browser.Headless || w.Browser.ViewportWidth != 1024 || w.Browser.ViewportHeight != 700 || w.Browser.Timeout != 12*time.Second {
		t.Fatalf("browser: %+v", w.Browser)
	}
	if w.Session.IdleTimeout != 30*time.Second || w.Session.MaxDuration != 5*time.Minute ||
		strings.Join(w.Session.Blocklist, ",") != "ads.example,*.tracker.net" || len(w.Session.Allowlist) != 1 {
		t.Fatalf("session: %+v", w.Session)
	}
	if w.LoginCheck == nil || w.LoginCheck.LoggedInSelector != "#whoami" || w.LoginCheck.LoginWallSelector != "form#login" {
		t.Fatalf("login_check: %+v", w.LoginCheck)
	}
	if len(w.Steps) != 21 {
		t.Fatalf("%d steps", len(w.Steps))
	}
	s := w.Steps
	if s[1].Text != "alice" || s[2].Text != "s3cret" || !s[2].Clear || s[2].Retries != 2 || s[2].Timeout != 3*time.Second || s[2].Name != "password" {
		t.Fatalf("type steps: %+v %+v", s[1], s[2])
	}
	if s[2].Line != 24 || s[0].Line != 22 {
		t.Fatalf("step lines %d %d", s[0].Line, s[2].Line)
	}
	if s[3].Key != "Enter" || s[4].Value != "3" || s[6].State != "visible" || s[7].State != "hidden" || s[8].URL != "*/account*" {
		t.Fatalf("steps: %+v", s[3:9])
	}
	if s[9].Extract != "text" || s[10].Extract != "list" || s[10].Attribute != "href" || !s[11].FullPage || s[12].As != "title" {
		t.Fatalf("steps: %+v", s[9:13])
	}
	if s[14].Duration != 250*time.Millisecond || s[15].URL != "https://example.com/" || s[16].Tab != "t1" || s[17].Tab != "t2" || s[18].Tab != "" {
		t.Fatalf("steps: %+v", s[14:19])
	}
	if s[20].Note != "mid run ${literal}" {
		t.Fatalf("note %q", s[20].Note)
	}
}

func TestParseDefaultsAndVarsOverride(t *testing.T) {
	src := "name: x\nprofile: p\nvars: {who: alice}\nsteps:\n  - navigate: http://h/${vars.who}\n"
	w, err := Parse("d.yaml", []byte(src), LoadOptions{Vars: map[string]string{"who": "bob"}, LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if w.Steps[0].URL != "http://h/bob" {
		t.Fatalf("--var did not override: %q", w.Steps[0].URL)
	}
	if w.Restore != RestoreLatest || w.Snapshot != SnapshotNever || w.Session.IdleTimeout != 2*time.Minute ||
		w.Session.MaxDuration != 10*time.Minute || w.Browser.Timeout != DefaultActionTimeout || w.Browser.Headless != nil {
		t.Fatalf("defaults: %+v", w)
	}
	inc, err := Parse("i.yaml", []byte("name: x\nprofile: null\nsteps:\n  - navigate: http://h/\n"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !inc.Incognito || inc.Restore != RestoreNone || inc.Snapshot != SnapshotNever {
		t.Fatalf("incognito defaults: %+v", inc)
	}
}

// TestParseErrors has one case per field's bad value and per unknown key;
// each names the line and the field.
func TestParseErrors(t *testing.T) {
	head := "name: x\nprofile: p\n" // lines 1-2
	step := "steps:\n  - navigate: http://h/\n"
	cases := []struct {
		name, src string
		line      int
		field     string
		msg       string
	}{
		{"malformed yaml", "name: x\nprofile: [p\nsteps: []\n", 3, "", "malformed YAML"},
		{"tab indentation", "name: x\n\tprofile: p\n", 2, "", `'\t' that cannot start any token (a tab: YAML indents with spaces only)`},
		{"duplicate top key", head + "profile: q\n" + step, 3, "profile", "appears twice in one mapping (first on line 2)"},
		{"duplicate step key", head + "steps:\n  - navigate: http://h/\n    navigate: http://i/\n", 5, "steps[0].navigate", "appears twice"},
		{"duplicate nested key", head + "session:\n  idle_timeout: 1m\n  idle_timeout: 2m\n" + step, 5, "session.idle_timeout", "first on line 4"},
		{"not a mapping", "- a\n- b\n", 1, "", "must be a mapping"},
		{"unknown top key", head + "stpes: []\n" + step, 3, "stpes", "unknown key"},
		{"missing name", "profile: p\n" + step, 1, "name", "required"},
		{"missing profile", "name: x\n" + step, 1, "profile", "required"},
		{"missing steps", head, 1, "steps", "required"},
		{"empty steps", head + "steps: []\n", 3, "steps", "at least one"},
		{"steps not a list", head + "steps: navigate\n", 3, "steps", "must be a list"},
		{"name a list", "name: [a]\nprofile: p\n" + step, 1, "name", "must be a string"},
		{"bad profile name", "name: x\nprofile: Work Profile\n" + step, 2, "profile", "not a valid profile name"},
		{"bad restore", head + "restore: \"no way\"\n" + step, 3, "restore", "latest, none or a snapshot id"},
		{"incognito restore", "name: x\nprofile: null\nrestore: latest\n" + step, 3, "restore", "incognito"},
		{"bad snapshot", head + "snapshot: sometimes\n" + step, 3, "snapshot", "on_success, never or always"},
		{"incognito snapshot", "name: x\nprofile: null\nsnapshot: always\n" + step, 3, "snapshot", "incognito"},
		{"browser unknown", head + "browser:\n  headles: true\n" + step, 4, "browser.headles", "unknown key"},
		{"browser headless", head + "browser:\n  headless: yes please\n" + step, 4, "browser.headless", "true or false"},
		{"browser timeout", head + "browser:\n  timeout: 30\n" + step, 4, "browser.timeout", "duration with a unit"},
		{"browser timeout neg", head + "browser:\n  timeout: -1s\n" + step, 4, "browser.timeout", "positive duration"},
		{"viewport width", head + "browser:\n  viewport: {width: 10, height: 800}\n" + step, 4, "browser.viewport.width", "from 200 to 10000"},
		{"viewport unknown", head + "browser:\n  viewport:\n    w: 800\n" + step, 5, "browser.viewport.w", "unknown key"},
		{"viewport scalar", head + "browser:\n  viewport: 800x600\n" + step, 4, "browser.viewport", "must be a mapping"},
		{"session unknown", head + "session:\n  idle: 1m\n" + step, 4, "session.idle", "unknown key"},
		{"idle timeout", head + "session:\n  idle_timeout: soon\n" + step, 4, "session.idle_timeout", "positive duration"},
		{"max duration", head + "session:\n  max_duration: 0s\n" + step, 4, "session.max_duration", "positive duration"},
		{"blocklist scalar", head + "session:\n  blocklist: ads.example\n" + step, 4, "session.blocklist", "list of strings"},
		{"blocklist entry", head + "session:\n  blocklist:\n    - ok.example\n    - https://ads.example/\n" + step, 6, "session.blocklist[1]", "not a domain pattern"},
		{"allowlist entry", head + "session:\n  allowlist: [\"[bad\"]\n" + step, 4, "session.allowlist[0]", "not a valid glob"},
		{"login_check unknown", head + "login_check:\n  url: https://h/\n  logged_in: '#x'\n" + step, 5, "login_check.logged_in", "unknown key"},
		{"login_check url", head + "login_check:\n  url: /account\n  logged_in_selector: '#x'\n" + step, 4, "login_check.url", "absolute http"},
		{"login_check no selector", head + "login_check:\n  url: https://h/\n" + step, 3, "login_check", "logged_in_selector"},
		{"vars bad name", head + "vars:\n  my-var: 1\n" + step, 4, "vars.my-var", "variable names"},
		{"vars nested", head + "vars:\n  a: {b: 1}\n" + step, 4, "vars.a", "must be a string"},
		{"undefined var", head + "steps:\n  - navigate: http://h/${vars.nope}\n", 4, "steps[0].navigate.url", "${vars.nope} is not defined"},
		{"unset env", head + "steps:\n  - navigate: http://h/${env.DIRECTOR_TEST_UNSET}\n", 4, "steps[0].navigate.url", "is not set"},
		{"empty env", head + "steps:\n  - type: {selector: '#p', text: '${env.DIRECTOR_TEST_EMPTY}'}\n", 4, "steps[0].type.text", "DIRECTOR_TEST_EMPTY is empty, which counts as not set"},
		{"empty env in vars", head + "vars: {pass: '${env.DIRECTOR_TEST_EMPTY}'}\n" + step, 3, "vars.pass", "is empty"},
		{"bad reference", head + "steps:\n  - navigate: http://h/${user}\n", 4, "steps[0].navigate.url", "bad reference"},
		{"unterminated reference", head + "steps:\n  - navigate: http://h/${vars.x\n", 4, "steps[0].navigate.url", "unterminated"},
		{"step unknown key", head + "steps:\n  - navigate: http://h/\n    wait: 1s\n", 5, "steps[0].wait", "unknown key"},
		{"step unknown action", head + "steps:\n  - hover: '#x'\n", 4, "steps[0].hover", "unknown key"},
		{"step two actions", head + "steps:\n  - navigate: http://h/\n    click: '#x'\n", 5, "steps[0].click", "exactly one action"},
		{"step no action", head + "steps:\n  - name: nothing\n", 4, "steps[0]", "needs one action"},
		{"step scalar", head + "steps:\n  - navigate\n", 4, "steps[0]", "a step is a mapping: write `navigate:` with a colon"},
		{"step timeout", head + "steps:\n  - navigate: http://h/\n    timeout: fast\n", 5, "steps[0].timeout", "positive duration"},
		{"step retries", head + "steps:\n  - navigate: http://h/\n    retries: 99\n", 5, "steps[0].retries", "from 0 to 10"},
		{"step retries text", head + "steps:\n  - navigate: http://h/\n    retries: many\n", 5, "steps[0].retries", "whole number"},
		{"navigate relative", head + "steps:\n  - navigate: /login\n", 4, "steps[0].navigate.url", "absolute http"},
		{"navigate without a host", head + "steps:\n  - navigate: 'http://:8080/'\n", 4, "steps[0].navigate.url", "with a host"},
		{"navigate missing url", head + "steps:\n  - navigate: {}\n", 4, "steps[0].navigate.url", "required"},
		{"navigate unknown key", head + "steps:\n  - navigate: {url: http://h/, wait: true}\n", 4, "steps[0].navigate.wait", "unknown key"},
		{"click empty", head + "steps:\n  - click: ''\n", 4, "steps[0].click.selector", "non-empty CSS selector"},
		{"click list", head + "steps:\n  - click: [a]\n", 4, "steps[0].click.selector", "must be a string"},
		{"type scalar", head + "steps:\n  - type: hello\n", 4, "steps[0].type", "must be a mapping"},
		{"type no text", head + "steps:\n  - type: {selector: '#a'}\n", 4, "steps[0].type.text", "required"},
		{"type clear", head + "steps:\n  - type: {selector: '#a', text: x, clear: maybe}\n", 4, "steps[0].type.clear", "true or false"},
		{"press bad key", head + "steps:\n  - press: Entr\n", 4, "steps[0].press.key", "unknown key"},
		{"select no value", head + "steps:\n  - select: {selector: '#a'}\n", 4, "steps[0].select.value", "required"},
		{"wait_for state", head + "steps:\n  - wait_for: {selector: '#a', state: gone}\n", 4, "steps[0].wait_for.state", "visible or hidden"},
		{"wait_for both", head + "steps:\n  - wait_for: {selector: '#a', url: '*x*'}\n", 4, "steps[0].wait_for", "not both"},
		{"wait_for url state", head + "steps:\n  - wait_for: {url: '*x*', state: hidden}\n", 4, "steps[0].wait_for.state", "applies to a selector"},
		{"wait_for nothing", head + "steps:\n  - wait_for: {}\n", 4, "steps[0].wait_for", "set selector"},
		{"extract no as", head + "steps:\n  - extract: {selector: '#a'}\n", 4, "steps[0].extract.as", "required"},
		{"extract bad as", head + "steps:\n  - extract: {selector: '#a', as: my-out}\n", 4, "steps[0].extract.as", "output names"},
		{"extract kind", head + "steps:\n  - extract: {selector: '#a', as: o, kind: json}\n", 4, "steps[0].extract.kind", "text, attribute, html, value or list"},
		{"extract attr missing", head + "steps:\n  - extract: {selector: '#a', as: o, kind: attribute}\n", 4, "steps[0].extract.attribute", "required for kind attribute"},
		{"extract attr extra", head + "steps:\n  - extract: {selector: '#a', as: o, attribute: href}\n", 4, "steps[0].extract.attribute", "only for kind attribute or list"},
		{"screenshot escape", head + "steps:\n  - screenshot: ../x.png\n", 4, "steps[0].screenshot.file", "inside the artifacts directory"},
		{"screenshot absolute", head + "steps:\n  - screenshot: /tmp/x.png\n", 4, "steps[0].screenshot.file", "inside the artifacts directory"},
		{"screenshot ext", head + "steps:\n  - screenshot: x.jpg\n", 4, "steps[0].screenshot.file", "must end in .png"},
		{"screenshot both", head + "steps:\n  - screenshot: {file: x.png, full_page: true, selector: '#a'}\n", 4, "steps[0].screenshot.full_page", "exclude each other"},
		{"screenshot full_page", head + "steps:\n  - screenshot: {file: x.png, full_page: 1}\n", 4, "steps[0].screenshot.full_page", "true or false"},
		{"evaluate empty", head + "steps:\n  - evaluate: ' '\n", 4, "steps[0].evaluate.expression", "non-empty JavaScript"},
		{"evaluate bad as", head + "steps:\n  - evaluate: {expression: '1', as: 1x}\n", 4, "steps[0].evaluate.as", "output names"},
		{"assert nothing", head + "steps:\n  - assert: {}\n", 4, "steps[0].assert", "set selector, text and/or url"},
		{"assert scalar", head + "steps:\n  - assert: '#a'\n", 4, "steps[0].assert", "must be a mapping"},
		{"assert unknown", head + "steps:\n  - assert: {title: x}\n", 4, "steps[0].assert.title", "unknown key"},
		{"sleep number", head + "steps:\n  - sleep: 5\n", 4, "steps[0].sleep.duration", "duration with a unit"},
		{"sleep bad", head + "steps:\n  - sleep: a while\n", 4, "steps[0].sleep.duration", "positive duration"},
		{"sleep undefined var", head + "steps:\n  - sleep: ${vars.nope}\n", 4, "steps[0].sleep.duration", "${vars.nope} is not defined"},
		{"sleep var not a duration", head + "vars: {pause: soon}\nsteps:\n  - sleep: ${vars.pause}\n", 5, "steps[0].sleep.duration", "positive duration"},
		{"open_tab relative", head + "steps:\n  - open_tab: /x\n", 4, "steps[0].open_tab.url", "absolute http"},
		{"switch_tab bad", head + "steps:\n  - switch_tab: second\n", 4, "steps[0].switch_tab.tab", "tab handle"},
		{"switch_tab missing", head + "steps:\n  - switch_tab:\n", 4, "steps[0].switch_tab.tab", "required"},
		{"close_tab bad", head + "steps:\n  - close_tab: t0\n", 4, "steps[0].close_tab.tab", "tab handle"},
		{"snapshot incognito", "name: x\nprofile: null\nsteps:\n  - snapshot:\n", 4, "steps[0].snapshot", "incognito"},
		{"snapshot unknown", head + "steps:\n  - snapshot: {notes: x}\n", 4, "steps[0].snapshot.notes", "unknown key"},
		{"alias", head + "vars:\n  a: &x hi\n  b: *x\n" + step, 5, "vars.b", "aliases are not supported"},
		{"duplicate key", "name: x\nname: y\nprofile: p\n" + step, 2, "name", "appears twice"},
		{"step kind without colon", head + "steps:\n  - navigate: http://h/\n  - close_tab\n", 5, "steps[1]", "write `close_tab:` with a colon"},
		{"step that is another string", head + "steps:\n  - hello\n", 4, "steps[0]", "must be a mapping"},
		{"step selector not CSS", head + "steps:\n  - click: 'form[['\n", 4, "steps[0].click.selector", `"form[[" is not a valid CSS selector: it has a [ inside the attribute selector`},
		{"login_check wall selector not CSS", head + "login_check:\n  url: https://h/\n  login_wall_selector: 'form[['\n" + step, 5, "login_check.login_wall_selector", `"form[[" is not a valid CSS selector`},
		{"login_check logged-in selector not CSS", head + "login_check:\n  url: https://h/\n  logged_in_selector: '#a)'\n" + step, 5, "login_check.logged_in_selector", "without a matching ("},
		{"login_check url blocked", head + "session:\n  blocklist: ['*.h.example']\nlogin_check:\n  url: https://www.h.example/account\n  logged_in_selector: '#a'\n" + step, 6, "login_check.url", "could never run: www.h.example is on the blocklist (*.h.example)"},
		{"login_check url not allowed", head + "session:\n  allowlist: [other.example]\nlogin_check:\n  url: https://h.example/account\n  logged_in_selector: '#a'\n" + step, 6, "login_check.url", "could never run: h.example is not on the allowlist"},
		{"key indented like no mapping", head + "steps:\n  - navigate: http://h/\n    timeout: 5s\n   retries: 2\n", 6, "retries", "indented like no mapping around it"},
		{"key indented under a value", head + "login_check:\n  url: http://h/\n   logged_in_selector: '#a'\n" + step, 5, "logged_in_selector", "indented deeper than url above it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("wf.yaml", []byte(c.src), LoadOptions{LookupEnv: env(map[string]string{"DIRECTOR_TEST_EMPTY": ""})})
			if err == nil {
				t.Fatalf("no error for:\n%s", c.src)
			}
			if errcode.Of(err) != errcode.InvalidAction || errcode.ExitStatus(err) != 2 {
				t.Fatalf("code %s (exit %d), want invalid_action (exit 2): %v", errcode.Of(err), errcode.ExitStatus(err), err)
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("not a ValidationError: %v", err)
			}
			for _, p := range verr.Problems {
				if p.Line == c.line && p.Field == c.field && strings.Contains(p.Msg, c.msg) && p.File == "wf.yaml" {
					want := "wf.yaml:" + strconv.Itoa(c.line) + ":"
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("message %q lacks %q", err.Error(), want)
					}
					return
				}
			}
			t.Fatalf("want line %d field %q msg ~%q; got %v", c.line, c.field, c.msg, verr.Problems)
		})
	}
}

func TestParseReportsAllProblems(t *testing.T) {
	src := "name: x\nprofile: p\nsession:\n  idle_timeout: soon\nsteps:\n  - click: ''\n  - sleep: 5\n"
	_, err := Parse("wf.yaml", []byte(src), LoadOptions{})
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Problems) != 3 {
		t.Fatalf("want 3 problems, got %v", err)
	}
	if verr.Problems[0].Line != 4 || verr.Problems[1].Line != 6 || verr.Problems[2].Line != 7 {
		t.Fatalf("problems out of order: %v", verr.Problems)
	}
}

// A step's durations take ${vars.X} and ${env.X} like its other strings;
// the session's do not.
func TestParseDurationsFromVars(t *testing.T) {
	src := "name: x\nprofile: p\nvars: {pause: 1500ms}\nsteps:\n  - sleep: ${vars.pause}\n  - sleep: {duration: '${env.PAUSE}'}\n  - click: '#a'\n    timeout: ${vars.pause}\n"
	w, err := Parse("d.yaml", []byte(src), LoadOptions{LookupEnv: env(map[string]string{"PAUSE": "2s"})})
	if err != nil {
		t.Fatal(err)
	}
	if w.Steps[0].Duration != 1500*time.Millisecond || w.Steps[1].Duration != 2*time.Second || w.Steps[2].Timeout != 1500*time.Millisecond {
		t.Fatalf("durations: %v, %v, timeout %v", w.Steps[0].Duration, w.Steps[1].Duration, w.Steps[2].Timeout)
	}
	_, err = Parse("s.yaml", []byte("name: x\nprofile: p\nvars: {t: 5m}\nsession:\n  idle_timeout: ${vars.t}\nsteps:\n  - sleep: 1s\n"), LoadOptions{LookupEnv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "session.idle_timeout") {
		t.Fatalf("a session duration took a var: %v", err)
	}
}

// TestParseRootCauseOnly: a mistake is reported once, by its cause, not
// also by what the value it spoils then fails; a problem with a hint of its
// own gives the error that hint.
func TestParseRootCauseOnly(t *testing.T) {
	head := "name: x\nprofile: p\n"
	step := "steps:\n  - navigate: http://h/\n"
	cases := []struct {
		name, src string
		msg       string // the one problem's message holds it
		hint      string // the error's hint holds it
	}{
		{"undefined var in a URL", head + "steps:\n  - navigate: ${vars.nope}/\n", "${vars.nope} is not defined", "fix the workflow file"},
		{"undefined var in a selector", head + "steps:\n  - click: '${vars.nope}'\n", "${vars.nope} is not defined", "fix the workflow file"},
		{"undefined var in a screenshot", head + "steps:\n  - screenshot: '${vars.nope}'\n", "${vars.nope} is not defined", "fix the workflow file"},
		{"undefined var in a key", head + "steps:\n  - press: '${vars.nope}'\n", "${vars.nope} is not defined", "fix the workflow file"},
		{"tab not a string", head + "steps:\n  - switch_tab: [t1]\n", "must be a string", "fix the workflow file"},
		{"unknown action", head + "steps:\n  - frobnicate: a\n", `unknown key "frobnicate"`, "fix the workflow file"},
		{"undefined var in login_check.url", head + "login_check:\n  url: ${vars.nope}/account\n  logged_in_selector: '#a'\n" + step, "${vars.nope} is not defined", "fix the workflow file"},
		{"undefined var in login_check selector", head + "login_check:\n  url: http://h/\n  logged_in_selector: '${vars.nope}'\n" + step, "${vars.nope} is not defined", "fix the workflow file"},
		{"login_check url blocked", head + "session:\n  blocklist: [h.example]\n  allowlist: [h.example]\nlogin_check:\n  url: https://h.example/\n  logged_in_selector: '#a'\n" + step,
			"h.example is on the blocklist (h.example)", `remove "h.example" from session.blocklist`},
		{"login_check url not allowed", head + "session:\n  allowlist: [other.example]\nlogin_check:\n  url: https://h.example/\n  logged_in_selector: '#a'\n" + step,
			"h.example is not on the allowlist", "add h.example to session.allowlist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("wf.yaml", []byte(c.src), LoadOptions{LookupEnv: env(nil)})
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("not a ValidationError: %v", err)
			}
			if len(verr.Problems) != 1 || !strings.Contains(verr.Problems[0].Msg, c.msg) {
				t.Fatalf("want one problem ~%q, got %d: %v", c.msg, len(verr.Problems), verr.Problems)
			}
			if errcode.ExitStatus(err) != 2 || !strings.Contains(errcode.HintOf(err), c.hint) {
				t.Errorf("exit %d, hint %q: want 2 and ~%q", errcode.ExitStatus(err), errcode.HintOf(err), c.hint)
			}
		})
	}
}

// close_tab with an empty handle closes the current tab, like no handle.
func TestCloseTabEmptyHandle(t *testing.T) {
	for _, step := range []string{"close_tab:", "close_tab: ''", "close_tab: {}", "close_tab: {tab: ''}"} {
		w, err := Parse("c.yaml", []byte("name: x\nprofile: p\nsteps:\n  - open_tab: http://h/\n  - "+step+"\n"), LoadOptions{LookupEnv: env(nil)})
		if err != nil {
			t.Errorf("%s: %v", step, err)
			continue
		}
		if w.Steps[1].Tab != "" {
			t.Errorf("%s: tab %q, want the current one", step, w.Steps[1].Tab)
		}
	}
}

// TestVarsOverrideSparesTheirEnv: a var that --var replaces does not need
// the ${env.NAME} of its default, unset or empty; without --var the
// default still needs it.
func TestVarsOverrideSparesTheirEnv(t *testing.T) {
	src := "name: x\nprofile: p\nvars: {pass: \"${env.PASS}\"}\nsteps:\n  - navigate: http://h/${vars.pass}\n"
	for _, e := range []map[string]string{nil, {"PASS": ""}} {
		w, err := Parse("d.yaml", []byte(src), LoadOptions{Vars: map[string]string{"pass": "given"}, LookupEnv: env(e)})
		if err != nil {
			t.Fatalf("env %v, --var pass=given: %v", e, err)
		}
		if w.Steps[0].URL != "http://h/given" {
			t.Fatalf("env %v: URL %q, want the --var value", e, w.Steps[0].URL)
		}
		if _, err := Parse("d.yaml", []byte(src), LoadOptions{LookupEnv: env(e)}); err == nil || !strings.Contains(err.Error(), "PASS") {
			t.Fatalf("env %v, no --var: %v; want an error naming PASS", e, err)
		}
	}
}

// TestParseBrokenVarReportedOnce: a var whose value cannot be resolved (an
// unset or empty ${env.X}, a value that is not a string) is one problem, at
// the var's line, that says what to set; the steps that use the var are not
// also told that it is not defined.
func TestParseBrokenVarReportedOnce(t *testing.T) {
	head := "name: x\nprofile: p\n"
	cases := []struct {
		name, src string
		line      int
		field     string
		msg       string // the one problem's message holds it
		hint      string // the error's hint holds it
	}{
		{"unset env, used in a type step",
			head + "vars:\n  user: alice\n  password: ${env.DEMO_PASSWORD}\nsteps:\n  - type: {selector: '#u', text: '${vars.user}'}\n  - type: {selector: '#p', text: '${vars.password}'}\n",
			5, "vars.password", "the environment variable DEMO_PASSWORD is not set: set it, or pass --var password=VALUE",
			"set the environment variable DEMO_PASSWORD (export DEMO_PASSWORD=VALUE) and run again, or give the var with --var password=VALUE"},
		{"empty env, used in a type step",
			head + "vars:\n  password: ${env.EMPTY}\nsteps:\n  - type: {selector: '#p', text: '${vars.password}'}\n",
			4, "vars.password", "EMPTY is empty, which counts as not set: set it, or pass --var password=VALUE", "or give the var with --var password=VALUE"},
		{"unset env, used in login_check.url and steps",
			head + "vars:\n  site: ${env.SITE}\nlogin_check:\n  url: ${vars.site}/account\n  logged_in_selector: '#a'\nsteps:\n  - navigate: ${vars.site}/login\n  - assert: {url: '${vars.site}/*'}\n",
			4, "vars.site", "SITE is not set: set it, or pass --var site=VALUE", "--var site=VALUE (which replaces vars.site)"},
		{"unset env, used as a duration",
			head + "vars:\n  pause: ${env.PAUSE}\nsteps:\n  - sleep: ${vars.pause}\n  - click: '#a'\n    timeout: ${vars.pause}\n",
			4, "vars.pause", "PAUSE is not set", "--var pause=VALUE"},
		{"var not a string",
			head + "vars:\n  site: [a]\nsteps:\n  - navigate: ${vars.site}/login\n",
			4, "vars.site", "must be a string", "fix the workflow file"},
		{"var that refers to a var",
			head + "vars:\n  a: b\n  site: ${vars.a}\nsteps:\n  - navigate: ${vars.site}/login\n",
			5, "vars.site", "vars cannot refer to other vars", "fix the workflow file"},
		{"unset env in a step, not a var",
			head + "steps:\n  - type: {selector: '#p', text: '${env.DEMO_PASSWORD}'}\n",
			4, "steps[0].type.text", "DEMO_PASSWORD is not set: set it", "set the environment variable DEMO_PASSWORD (export DEMO_PASSWORD=VALUE) and run again"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("wf.yaml", []byte(c.src), LoadOptions{LookupEnv: env(map[string]string{"EMPTY": ""})})
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("not a ValidationError: %v", err)
			}
			if len(verr.Problems) != 1 {
				t.Fatalf("want one problem, got %d: %v", len(verr.Problems), verr.Problems)
			}
			p := verr.Problems[0]
			if p.Line != c.line || p.Field != c.field || !strings.Contains(p.Msg, c.msg) {
				t.Fatalf("got %s; want line %d, field %s, message ~%q", p, c.line, c.field, c.msg)
			}
			if errcode.Of(err) != errcode.InvalidAction || !strings.Contains(errcode.HintOf(err), c.hint) {
				t.Errorf("code %s, hint %q: want invalid_action and ~%q", errcode.Of(err), errcode.HintOf(err), c.hint)
			}
			if !strings.Contains(c.hint, "--var") && strings.Contains(err.Error(), "--var") {
				t.Errorf("%v: offers --var for what is not a var", err)
			}
		})
	}
}

// TestParseVarFlags: a --var sets a var the workflow declares under vars or
// uses as ${vars.NAME}; one that names neither is refused as invalid_input,
// naming it and the workflow's vars (never its value), so that a misspelt
// --var is not silently ignored.
func TestParseVarFlags(t *testing.T) {
	cases := []struct {
		name, src string
		vars      map[string]string
		code      errcode.Code // "" for no error
		msg, hint string       // the error's message and hint hold them
	}{
		{"overrides a declared var", "name: x\nprofile: p\nvars: {site: http://h}\nsteps:\n  - navigate: ${vars.site}/\n",
			map[string]string{"site": "http://i"}, "", "", ""},
		{"declared, not used", "name: x\nprofile: p\nvars: {site: http://h}\nsteps:\n  - navigate: http://h/\n",
			map[string]string{"site": "http://i"}, "", "", ""},
		{"adds a var a step uses", "name: x\nprofile: p\nsteps:\n  - navigate: ${vars.site}/\n",
			map[string]string{"site": "http://i"}, "", "", ""},
		{"adds a var the login check uses", "name: x\nprofile: p\nlogin_check:\n  url: ${vars.site}/account\n  logged_in_selector: '#a'\nsteps:\n  - sleep: 1s\n",
			map[string]string{"site": "http://i"}, "", "", ""},
		{"adds a var the profile uses", "name: x\nprofile: ${vars.who}\nsteps:\n  - sleep: 1s\n",
			map[string]string{"who": "alice"}, "", "", ""},
		{"misspelt", "name: x\nprofile: p\nvars:\n  password: ${env.PASS}\n  user: alice\nsteps:\n  - type: {selector: '#p', text: '${vars.password}'}\n  - navigate: ${vars.site}/\n",
			map[string]string{"pasword": "hunter22", "site": "http://i"}, errcode.InvalidInput,
			"--var pasword: workflow wf.yaml has no var pasword (its vars: password, site, user)", "check the spelling against the workflow's vars (password, site, user), or drop --var pasword"},
		{"two misspelt", "name: x\nprofile: p\nvars: {user: alice}\nsteps:\n  - navigate: http://h/${vars.user}\n",
			map[string]string{"usr": "bob", "uesr": "bob"}, errcode.InvalidInput, "--var uesr, --var usr: workflow wf.yaml has no var uesr or usr (its vars: user)", "drop --var uesr, --var usr"},
		{"a workflow without vars", "name: x\nprofile: p\nsteps:\n  - navigate: http://h/\n",
			map[string]string{"site": "http://i"}, errcode.InvalidInput, "it declares no vars and uses no ${vars.NAME}", "drop --var site"},
		{"$${vars.X} is no use", "name: x\nprofile: p\nsteps:\n  - navigate: http://h/$${vars.site}\n",
			map[string]string{"site": "http://i"}, errcode.InvalidInput, "has no var site", "drop --var site"},
		{"a name no ${vars.NAME} can use", "name: x\nprofile: p\nvars: {a: b}\nsteps:\n  - navigate: http://h/${vars.a}\n",
			map[string]string{"a-b": "1", "9x": "2"}, errcode.InvalidInput, `--var "9x", "a-b": variable names are letters, digits and _`, "write --var NAME=VALUE"},
		{"the file's problems come first", "name: x\nprofile: p\nsteps:\n  - clik: '#a'\n",
			map[string]string{"site": "http://i"}, errcode.InvalidAction, `unknown key "clik"`, "fix the workflow file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("wf.yaml", []byte(c.src), LoadOptions{Vars: c.vars, LookupEnv: env(map[string]string{"PASS": "s3cret"})})
			if c.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if errcode.Of(err) != c.code || errcode.ExitStatus(err) != 2 {
				t.Fatalf("code %s (exit %d), want %s (exit 2): %v", errcode.Of(err), errcode.ExitStatus(err), c.code, err)
			}
			if !strings.Contains(err.Error(), c.msg) || !strings.Contains(errcode.HintOf(err), c.hint) {
				t.Fatalf("got %q, hint %q; want ~%q, hint ~%q", err, errcode.HintOf(err), c.msg, c.hint)
			}
			for _, v := range c.vars {
				if strings.Contains(err.Error()+errcode.HintOf(err), v) {
					t.Errorf("the error quotes a --var value %q: %v", v, err)
				}
			}
		})
	}
}

// TestSnapshotNeedsLoginCheck: only a run that proves the login may
// snapshot, so a workflow without a login_check does not snapshot by
// default, and one that asks to (snapshot: on_success or always, or a
// snapshot step) is refused at its line; with a check, on_success is the
// default. Before, a logged-out run of a workflow without a check replaced
// the latest good snapshot.
func TestSnapshotNeedsLoginCheck(t *testing.T) {
	const check = "login_check:\n  url: http://h/account\n  logged_in_selector: '#me'\n"
	cases := []struct {
		name, src string
		want      SnapshotPolicy
		line      int    // of the problem, 0 for none
		field     string // of the problem
	}{
		{"no check, no policy", "name: x\nprofile: p\nsteps:\n  - navigate: http://h/\n", SnapshotNever, 0, ""},
		{"check, no policy", "name: x\nprofile: p\n" + check + "steps:\n  - navigate: http://h/\n", SnapshotOnSuccess, 0, ""},
		{"no check, never", "name: x\nprofile: p\nsnapshot: never\nsteps:\n  - navigate: http://h/\n", SnapshotNever, 0, ""},
		{"check, always", "name: x\nprofile: p\nsnapshot: always\n" + check + "steps:\n  - navigate: http://h/\n", SnapshotAlways, 0, ""},
		{"incognito", "name: x\nprofile: null\nsteps:\n  - navigate: http://h/\n", SnapshotNever, 0, ""},
		{"no check, on_success", "name: x\nprofile: p\nsnapshot: on_success\nsteps:\n  - navigate: http://h/\n", "", 3, "snapshot"},
		{"no check, always", "name: x\nprofile: p\nsnapshot: always\nsteps:\n  - navigate: http://h/\n", "", 3, "snapshot"},
		{"no check, a snapshot step", "name: x\nprofile: p\nsnapshot: never\nsteps:\n  - navigate: http://h/\n  - snapshot: {note: n}\n", "", 6, "steps[1].snapshot"},
		{"login_check: null", "name: x\nprofile: p\nsnapshot: on_success\nlogin_check: null\nsteps:\n  - navigate: http://h/\n", "", 3, "snapshot"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := Parse("wf.yaml", []byte(c.src), LoadOptions{})
			if c.line == 0 {
				if err != nil || w.Snapshot != c.want {
					t.Fatalf("got %v, snapshot %v; want %s", err, w, c.want)
				}
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Problems) != 1 {
				t.Fatalf("got %v, want one problem", err)
			}
			p := verr.Problems[0]
			if p.Line != c.line || p.Field != c.field || !strings.Contains(p.Msg, "needs a login_check") || !strings.Contains(p.Hint, "add a login_check") {
				t.Fatalf("problem %+v, want line %d field %s", p, c.line, c.field)
			}
		})
	}
}

// TestControlCharactersRefused: a workflow name or snapshot note goes into
// a snapshot's manifest, which no director reads back with a control
// character in it; the file is refused at the field's line instead.
func TestControlCharactersRefused(t *testing.T) {
	const check = "login_check: {url: 'http://h/a', logged_in_selector: '#me'}\n"
	for _, c := range []struct{ name, src, field string }{
		{"name with ESC", "name: \"x\\e[31m\"\nprofile: p\nsteps:\n  - sleep: 1s\n", "name"},
		{"name with a tab", "name: \"a\\tb\"\nprofile: p\nsteps:\n  - sleep: 1s\n", "name"},
		{"note with a newline", "name: x\nprofile: p\n" + check + "steps:\n  - snapshot: {note: \"a\\nb\"}\n", "steps[0].snapshot.note"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("wf.yaml", []byte(c.src), LoadOptions{})
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Problems) != 1 || verr.Problems[0].Field != c.field {
				t.Fatalf("got %v, want one problem at %s", err, c.field)
			}
		})
	}
}
