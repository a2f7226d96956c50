package session

import (
	"context"
	"image/png"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"director/errcode"
	"director/internal/testsite"
	"director/launcher"
)

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !ValidID(id) {
			t.Fatalf("NewID gave %q, not 6 chars of [a-z2-7]", id)
		}
		seen[id] = true
	}
	if len(seen) < 990 {
		t.Fatalf("only %d distinct ids in 1000", len(seen))
	}
	for _, bad := range []string{"", "abc", "abcdefg", "ABCDEF", "abc01d", "abc-de"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
}

func TestPolicy(t *testing.T) {
	cases := []struct {
		name      string
		block     []string
		allow     []string
		url       string
		wantBlock bool
	}{
		{"plain host blocks itself", []string{"facebook.com"}, nil, "https://facebook.com/x", true},
		{"plain host blocks subdomains", []string{"facebook.com"}, nil, "https://www.facebook.com/", true},
		{"plain host is not a suffix match", []string{"facebook.com"}, nil, "https://notfacebook.com/", false},
		{"glob subdomain", []string{"*.ads.net"}, nil, "http://a.b.ads.net:8080/", true},
		{"glob does not match apex", []string{"*.ads.net"}, nil, "http://ads.net/", false},
		{"port is ignored", []string{"blocked.test"}, nil, "http://blocked.test:4321/landing", true},
		{"case is ignored", []string{"blocked.test"}, nil, "http://BLOCKED.test/", true},
		{"about:blank always allowed", []string{"*"}, nil, "about:blank", false},
		{"data: always allowed", []string{"*"}, nil, "data:text/html,hi", false},
		{"allowlist admits listed", nil, []string{"127.0.0.1"}, "http://127.0.0.1:9/", false},
		{"allowlist refuses others", nil, []string{"127.0.0.1"}, "http://localhost:9/", true},
		{"blocklist wins over allowlist", []string{"evil.example"}, []string{"*.example"}, "https://evil.example/", true},
		{"ws is checked", []string{"blocked.test"}, nil, "ws://blocked.test/socket", true},
		{"IPv4-mapped IPv6 is its IPv4 address", []string{"127.0.0.2"}, nil, "http://[::ffff:127.0.0.2]:18777/", true},
		{"IPv4-mapped IPv6 as Chrome writes it", []string{"127.0.0.2"}, nil, "http://[::ffff:7f00:2]:18777/", true},
		{"IPv4-mapped IPv6 websocket", []string{"127.0.0.2"}, nil, "wss://[::ffff:7f00:2]/s", true},
		{"IPv4-mapped IPv6 under an IPv4 glob", []string{"127.0.0.*"}, nil, "http://[::ffff:127.0.0.9]/", true},
		{"another mapped address passes", []string{"127.0.0.2"}, nil, "http://[::ffff:127.0.0.3]/", false},
		{"plain IPv4 still blocked", []string{"127.0.0.2"}, nil, "http://127.0.0.2:18777/", true},
		{"an IPv6 address is not a mapped one", []string{"127.0.0.2"}, nil, "http://[::7f00:2]/", false},
		{"allowlist admits the mapped form", nil, []string{"127.0.0.1"}, "http://[::ffff:7f00:1]:9/", false},
		// Chrome sends hosts that net/url refuses; they are checked all the same.
		{"a host net/url refuses", []string{"blocked.test"}, nil, "http://a}b.blocked.test:9/sub", true},
		{"an escaped host", []string{"blocked.test"}, nil, "http://a%2Ab.blocked.test/", true},
		{"userinfo before such a host", []string{"blocked.test"}, nil, "http://good.test@x{y.blocked.test/", true},
		{"such a host elsewhere passes", []string{"blocked.test"}, nil, "http://a}b.other.test/", false},
		{"such a host off the allowlist", nil, []string{"good.test"}, "https://a{b.test/", true},
		{"a bracketed IPv4 glob class", []string{"10.0.0.[0-9a-f]"}, nil, "http://[::ffff:a00:1]/", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Policy{Blocklist: c.block, Allowlist: c.allow}.Check(c.url)
			if (got != "") != c.wantBlock {
				t.Fatalf("Check(%q) = %q, want blocked=%v", c.url, got, c.wantBlock)
			}
		})
	}
}

// TestPolicyHint: the hint of a refusal names what lets the host through:
// the blocklist entry that refused it (an allowlist entry would not), or
// the allowlist.
func TestPolicyHint(t *testing.T) {
	cases := []struct {
		block, allow []string
		url, want    string
	}{
		{[]string{"*.ads.net"}, nil, "http://a.ads.net/", `remove "*.ads.net" from session.blocklist if the workflow really needs a.ads.net (the allowlist does not override the blocklist)`},
		{[]string{"localhost"}, []string{"localhost", "127.0.0.1"}, "http://localhost:9/", `remove "localhost" from session.blocklist if the workflow really needs localhost (the allowlist does not override the blocklist)`},
		{nil, []string{"127.0.0.1"}, "http://127.0.0.2:9/", "add 127.0.0.2 to session.allowlist if the workflow really needs it"},
		{[]string{"evil.test"}, []string{"127.0.0.1"}, "http://localhost/", "add localhost to session.allowlist if the workflow really needs it"},
		{[]string{"evil.test"}, nil, "http://good.test/", ""},
	}
	for _, c := range cases {
		if got := (Policy{Blocklist: c.block, Allowlist: c.allow}).hint(c.url); got != c.want {
			t.Errorf("block %q allow %q, %s: hint %q, want %q", c.block, c.allow, c.url, got, c.want)
		}
	}
}

func TestValidatePattern(t *testing.T) {
	for _, good := range []string{"example.com", "*.example.com", "ads?.example.net", "127.0.0.1", "[ab].example"} {
		if err := ValidatePattern(good); err != nil {
			t.Errorf("ValidatePattern(%q) = %v", good, err)
		}
	}
	for _, bad := range []string{"", "https://example.com", "example.com/path", "Example.com", "example.com:80", "[bad", "bücher.test"} {
		if err := ValidatePattern(bad); err == nil {
			t.Errorf("ValidatePattern(%q) accepted it", bad)
		}
	}
}

func TestMatchURL(t *testing.T) {
	cases := []struct {
		glob, url string
		want      bool
	}{
		{"*/account*", "http://127.0.0.1:1/account", true},
		{"*/account*", "http://127.0.0.1:1/login?next=/account", true},
		{"http://h/a?b", "http://h/ab", false},  // ? is one character
		{"http://h/a.b", "http://h/aXb", false}, // . is literal
		{"https://*", "http://x", false},
	}
	for _, c := range cases {
		if got := MatchURL(c.glob, c.url); got != c.want {
			t.Errorf("MatchURL(%q, %q) = %v", c.glob, c.url, got)
		}
	}
}

func TestKeyByName(t *testing.T) {
	for _, k := range []string{"Enter", "enter", "Tab", "Escape", "ArrowDown", "a", "F5"} {
		if _, ok := KeyByName(k); !ok {
			t.Errorf("KeyByName(%q) not found", k)
		}
	}
	for _, k := range []string{"", "Entr", "ab"} {
		if _, ok := KeyByName(k); ok {
			t.Errorf("KeyByName(%q) found", k)
		}
	}
}

// recorder is an AuditSink that keeps events in memory.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Record(_ context.Context, e Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

func (r *recorder) last(kind string) (Event, bool) {
	ev := r.all()
	for i := len(ev) - 1; i >= 0; i-- {
		if ev[i].Kind == kind {
			return ev[i], true
		}
	}
	return Event{}, false
}

type fixture struct {
	site *testsite.Site
	s    *Session
	rec  *recorder
}

func start(t *testing.T, o Options) *fixture {
	t.Helper()
	site := testsite.New(t)
	rec := &recorder{}
	// As a workflow run does: the policy also goes into Chrome's host
	// resolver rules.
	o.Launch = launcherWithRules(t, o.Policy.ResolverRules(), site.ChromeFlags()...)
	o.Audit = rec
	if o.ActionTimeout == 0 {
		o.ActionTimeout = 10 * time.Second
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background(), EndCompleted) })
	return &fixture{site: site, s: s, rec: rec}
}

func (f *fixture) do(t *testing.T, a Action) Result {
	t.Helper()
	res, err := f.s.Do(context.Background(), a)
	if err != nil {
		t.Fatalf("%s: %v [%s]", a.Type, err, errcode.Of(err))
	}
	return res
}

func wantCode(t *testing.T, err error, code errcode.Code) {
	t.Helper()
	if errcode.Of(err) != code {
		t.Fatalf("got error %v [%s], want code %s", err, errcode.Of(err), code)
	}
}

func waitDone(t *testing.T, s *Session, within time.Duration) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(within):
		t.Fatalf("session did not end within %s (state %s)", within, s.Info().State)
	}
}

func TestActions(t *testing.T) {
	f := start(t, Options{Profile: "p1", Policy: Policy{Blocklist: []string{testsite.BlockedHost}}})
	if !ValidID(f.s.ID()) || f.s.Info().State != StateActive {
		t.Fatalf("info after start: %+v", f.s.Info())
	}
	f.do(t, Action{Type: ActNavigate, URL: f.site.At("/widgets")})
	const secret = "hunter2-secret"
	f.do(t, Action{Type: ActType, Selector: "#name", Text: secret})
	f.do(t, Action{Type: ActSelect, Selector: "#color", Value: "green"})
	f.do(t, Action{Type: ActClick, Selector: "#go"})
	if got := f.do(t, Action{Type: ActExtract, Selector: "#out", Extract: "text"}).Value; got != "Hello "+secret+" (green)" {
		t.Fatalf("extract text = %q", got)
	}
	f.do(t, Action{Type: ActWaitFor, Selector: "#later"})
	f.do(t, Action{Type: ActType, Selector: "#name", Text: "bob", Clear: true})
	f.do(t, Action{Type: ActPress, Key: "Enter", Selector: "#name"})
	if got := f.do(t, Action{Type: ActExtract, Selector: "#keys"}).Value; got != "enter:bob" {
		t.Fatalf("after clear+type+Enter: %q", got)
	}
	list := f.do(t, Action{Type: ActExtract, Selector: "#items li", Extract: "list"}).Value
	if strings.Join(list.([]string), ",") != "one,two,three" {
		t.Fatalf("extract list = %v", list)
	}
	if got := f.do(t, Action{Type: ActExtract, Selector: "#ext", Extract: "attribute", Attribute: "data-kind"}).Value; got != "external" {
		t.Fatalf("extract attribute = %v", got)
	}
	if got := f.do(t, Action{Type: ActExtract, Selector: "#color", Extract: "value"}).Value; got != "green" {
		t.Fatalf("extract value = %v", got)
	}
	if got := f.do(t, Action{Type: ActEvaluate, Expression: `Promise.resolve(6*7)`}).Value; got != float64(42) {
		t.Fatalf("evaluate = %#v", got)
	}
	for expr, want := range map[string]any{
		`({a: [1, "x", null], b: document.title.length > 0})`: map[string]any{"a": []any{float64(1), "x", nil}, "b": true},
		`document.querySelectorAll("#ext").length`:            float64(1),
		`"text"`:    "text",
		`undefined`: nil,
		`NaN`:       nil,
		`-0`:        float64(0),
		// as JSON.stringify gives them
		`new Date(Date.UTC(2026, 10, 24, 12, 30))`:                 "2026-11-24T12:30:00.000Z",
		`({when: new Date(0), n: Infinity, f() {}, u: undefined})`: map[string]any{"when": "1970-01-01T00:00:00.000Z", "n": nil},
	} {
		if got := f.do(t, Action{Type: ActEvaluate, Expression: expr}).Value; !reflect.DeepEqual(got, want) {
			t.Fatalf("evaluate %s = %#v, want %#v", expr, got, want)
		}
	}
	f.do(t, Action{Type: ActAssert, Selector: "#out", Text: "green", URL: "*/widgets"})
	file := filepath.Join(t.TempDir(), "shots", "page.png")
	f.do(t, Action{Type: ActScreenshot, File: file, FullPage: true})
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(fh); err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	fh.Close()
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Fatalf("screenshot mode %v, want 0600", st.Mode().Perm())
	}
	// A symlink already in a shared artifacts directory, at the name or on
	// the way to it, is never written through to the file outside.
	arts, outside := t.TempDir(), filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(arts, "s.png")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(arts, "sub")); err != nil {
		t.Fatal(err)
	}
	got := f.do(t, Action{Type: ActScreenshot, Dir: arts, File: "s.png"}).File
	if st, err := os.Lstat(got); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 || got != filepath.Join(arts, "s.png") {
		t.Errorf("screenshot over a symlink: %s %v %v", got, st, err)
	}
	if _, err := f.s.Do(context.Background(), Action{Type: ActScreenshot, Dir: arts, File: "sub/t.png"}); err == nil {
		t.Error("a screenshot was written through a symlinked directory")
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("the file outside the artifacts directory was overwritten (%d bytes)", len(b))
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(outside), "t.png")); err == nil {
		t.Error("t.png was written outside the artifacts directory")
	}

	// Tabs.
	res := f.do(t, Action{Type: ActOpenTab, URL: f.site.At("/landing")})
	if res.Tab != "t2" {
		t.Fatalf("open_tab gave %q, want t2", res.Tab)
	}
	if got := f.do(t, Action{Type: ActExtract, Selector: "h1"}).Value; got != "Landing" {
		t.Fatalf("new tab is not current: %v", got)
	}
	f.do(t, Action{Type: ActSwitchTab, Tab: "t1"})
	if got := f.do(t, Action{Type: ActExtract, Selector: "h1"}).Value; got != "Widgets" {
		t.Fatalf("after switch_tab t1: %v", got)
	}
	_, err = f.s.Do(context.Background(), Action{Type: ActSwitchTab, Tab: "t9"})
	wantCode(t, err, errcode.TabNotFound)
	f.do(t, Action{Type: ActCloseTab, Tab: "t2"})
	if tabs := f.s.Info().Tabs; len(tabs) != 1 || tabs[0].Handle != "t1" || !tabs[0].Current {
		t.Fatalf("tabs after close: %+v", tabs)
	}
	_, err = f.s.Do(context.Background(), Action{Type: ActCloseTab})
	wantCode(t, err, errcode.InvalidAction)

	// Errors carry their codes.
	_, err = f.s.Do(context.Background(), Action{Type: ActClick, Selector: "#nope", Timeout: 700 * time.Millisecond})
	wantCode(t, err, errcode.ElementNotFound)
	_, err = f.s.Do(context.Background(), Action{Type: ActWaitFor, Selector: "#out", State: "hidden", Timeout: 700 * time.Millisecond})
	wantCode(t, err, errcode.Timeout)
	_, err = f.s.Do(context.Background(), Action{Type: ActWaitFor, URL: "*/never*", Timeout: 500 * time.Millisecond})
	wantCode(t, err, errcode.Timeout)
	_, err = f.s.Do(context.Background(), Action{Type: ActEvaluate, Expression: `throw new Error("x")`})
	wantCode(t, err, errcode.InvalidAction)

	// The audit trail names every action and never the typed text.
	info := f.s.Info()
	if info.ActionCount < 20 {
		t.Fatalf("action count %d", info.ActionCount)
	}
	if err := f.s.Close(context.Background(), EndCompleted); err != nil {
		t.Fatal(err)
	}
	if f.s.EndReason() != EndCompleted || f.s.Info().State != StateClosed {
		t.Fatalf("after Close: %+v", f.s.Info())
	}
	_, err = f.s.Do(context.Background(), Action{Type: ActNavigate, URL: f.site.At("/")})
	wantCode(t, err, errcode.SessionNotFound)
	evs := f.rec.all()
	if evs[0].Kind != EventSessionStart || evs[len(evs)-1].Kind != EventSessionEnd || evs[len(evs)-1].Reason != EndCompleted {
		t.Fatalf("first/last events: %+v / %+v", evs[0], evs[len(evs)-1])
	}
	var sawType bool
	for _, e := range evs {
		if e.SessionID != f.s.ID() || e.Profile != "p1" {
			t.Fatalf("event without session/profile: %+v", e)
		}
		for _, field := range []string{e.Detail, e.Action, e.Domain} {
			if strings.Contains(field, secret) {
				t.Fatalf("audit event holds typed text: %+v", e)
			}
		}
		if e.Action == "type" {
			sawType = true
			if !strings.Contains(e.Detail, "len=") || e.Domain != "127.0.0.1" || e.Tab != "t1" {
				t.Fatalf("type event: %+v", e)
			}
		}
	}
	if !sawType {
		t.Fatal("no type event")
	}
	end, _ := f.rec.last(EventSessionEnd)
	if end.ActionCount != info.ActionCount {
		t.Fatalf("end event action count %d, want %d", end.ActionCount, info.ActionCount)
	}
}

func TestBlocklist(t *testing.T) {
	cases := []struct {
		name string
		act  func(f *fixture) Action
	}{
		{"link click", func(f *fixture) Action { return Action{Type: ActClick, Selector: "#blocked-link"} }},
		{"server redirect", func(f *fixture) Action { return Action{Type: ActClick, Selector: "#redirect-link"} }},
		{"navigate", func(f *fixture) Action {
			return Action{Type: ActNavigate, URL: f.site.On(testsite.BlockedHost, "/landing")}
		}},
		{"popup link", func(f *fixture) Action {
			if _, err := f.s.Do(context.Background(), Action{Type: ActEvaluate, Expression: `(() => { const a = document.createElement("a");
				a.id = "pop"; a.target = "_blank"; a.textContent = "popup"; a.href = ` + js(f.site.On(testsite.BlockedHost, "/landing")) + `;
				document.body.prepend(a); return 1; })()`}); err != nil {
				panic(err)
			}
			return Action{Type: ActClick, Selector: "#pop"}
		}},
		{"script navigation", func(f *fixture) Action {
			return Action{Type: ActEvaluate, Expression: `location.href = ` + js(f.site.On(testsite.BlockedHost, "/landing")) + `; 1`}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := start(t, Options{Profile: "p1", Policy: Policy{Blocklist: []string{testsite.BlockedHost}}})
			f.do(t, Action{Type: ActNavigate, URL: f.site.At("/links")})
			_, err := f.s.Do(context.Background(), c.act(f))
			if c.name != "navigate" {
				// A click or script returns before the navigation starts;
				// the blocked request ends the session on its own.
				waitDone(t, f.s, 10*time.Second)
				err = f.s.Err()
			}
			wantCode(t, err, errcode.DomainBlocked)
			waitDone(t, f.s, 10*time.Second)
			if f.s.EndReason() != EndDomainBlocked {
				t.Fatalf("end reason %q", f.s.EndReason())
			}
			if n := f.site.Hits("/landing"); n != 0 {
				t.Fatalf("the blocked request reached the server %d times", n)
			}
			var blocked bool
			for _, e := range f.rec.all() {
				if e.Code == errcode.DomainBlocked && e.Domain == testsite.BlockedHost {
					blocked = true
				}
			}
			end, _ := f.rec.last(EventSessionEnd)
			if !blocked || end.Reason != EndDomainBlocked {
				t.Fatalf("audit trail lacks the block: %+v", f.rec.all())
			}
		})
	}
}

func TestAllowedNavigationPasses(t *testing.T) {
	f := start(t, Options{Policy: Policy{Blocklist: []string{testsite.BlockedHost}}})
	f.do(t, Action{Type: ActNavigate, URL: f.site.At("/links")})
	f.do(t, Action{Type: ActClick, Selector: "#localhost-link"})
	f.do(t, Action{Type: ActWaitFor, Selector: "#host"})
	if got := f.do(t, Action{Type: ActExtract, Selector: "#host"}).Value.(string); !strings.HasPrefix(got, "localhost:") {
		t.Fatalf("landing host %q", got)
	}
}

func TestIdleTimeout(t *testing.T) {
	f := start(t, Options{IdleTimeout: 1500 * time.Millisecond})
	f.do(t, Action{Type: ActNavigate, URL: f.site.At("/")})
	// A sleep is idleness: it outlasts the idle timeout.
	_, err := f.s.Do(context.Background(), Action{Type: ActSleep, Duration: 20 * time.Second})
	wantCode(t, err, errcode.Timeout)
	waitDone(t, f.s, 15*time.Second)
	if f.s.EndReason() != EndIdleTimeout {
		t.Fatalf("end reason %q, want idle_timeout", f.s.EndReason())
	}
	if end, _ := f.rec.last(EventSessionEnd); end.Reason != EndIdleTimeout {
		t.Fatalf("end event %+v", end)
	}
}

func TestIdleTimeoutWithoutActions(t *testing.T) {
	f := start(t, Options{IdleTimeout: 500 * time.Millisecond})
	waitDone(t, f.s, 15*time.Second)
	if f.s.EndReason() != EndIdleTimeout {
		t.Fatalf("end reason %q, want idle_timeout", f.s.EndReason())
	}
}

func TestMaxDuration(t *testing.T) {
	f := start(t, Options{MaxDuration: 1500 * time.Millisecond, IdleTimeout: time.Minute})
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		_, err = f.s.Do(context.Background(), Action{Type: ActNavigate, URL: f.site.At("/slow?ms=300")})
	}
	wantCode(t, err, errcode.Timeout)
	waitDone(t, f.s, 15*time.Second)
	if f.s.EndReason() != EndMaxDuration {
		t.Fatalf("end reason %q, want max_duration", f.s.EndReason())
	}
}

func TestHumanRequired(t *testing.T) {
	f := start(t, Options{})
	_, err := f.s.Do(context.Background(), Action{Type: ActNavigate, URL: f.site.At("/captcha")})
	wantCode(t, err, errcode.HumanRequired)
	if f.s.Info().State != StatePaused {
		t.Fatalf("state %s, want paused", f.s.Info().State)
	}
	_, err = f.s.Do(context.Background(), Action{Type: ActExtract, Selector: "h1"})
	wantCode(t, err, errcode.HumanRequired)
	if err := f.s.Resume(); err != nil {
		t.Fatal(err)
	}
	// hCaptcha too, reached by a click.
	f.do(t, Action{Type: ActNavigate, URL: f.site.At("/")})
	_, err = f.s.Do(context.Background(), Action{Type: ActNavigate, URL: f.site.At("/hcaptcha")})
	wantCode(t, err, errcode.HumanRequired)
}

func TestLoginCheck(t *testing.T) {
	f := start(t, Options{})
	check := Action{Type: ActLoginCheck, URL: f.site.At("/account"), LoggedInSelector: "#whoami", LoginWallSelector: "form#login"}
	_, err := f.s.Do(context.Background(), check)
	wantCode(t, err, errcode.HumanRequired)
	if err := f.s.Resume(); err != nil {
		t.Fatal(err)
	}
	f.do(t, Action{Type: ActType, Selector: "#username", Text: "alice"})
	f.do(t, Action{Type: ActType, Selector: "#password", Text: "secret"})
	f.do(t, Action{Type: ActClick, Selector: "#submit"})
	f.do(t, Action{Type: ActWaitFor, Selector: "#whoami"})
	f.do(t, check)
	// Only a wall selector: logged in when the wall is absent.
	f.do(t, Action{Type: ActLoginCheck, URL: f.site.At("/account"), LoginWallSelector: "form#login"})
}

func TestRestartKeepsTabs(t *testing.T) {
	f := start(t, Options{})
	f.do(t, Action{Type: ActNavigate, URL: f.site.At("/widgets")})
	f.do(t, Action{Type: ActOpenTab, URL: f.site.At("/landing")})
	var called bool
	if err := f.s.Restart(context.Background(), func(context.Context) error { called = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if !called {
		t.Fatal("between was not called")
	}
	tabs := f.s.Info().Tabs
	if len(tabs) != 2 || tabs[0].Handle != "t1" || tabs[1].Handle != "t2" || !tabs[1].Current ||
		!strings.HasSuffix(tabs[0].URL, "/widgets") || !strings.HasSuffix(tabs[1].URL, "/landing") {
		t.Fatalf("tabs after restart: %+v", tabs)
	}
	if got := f.do(t, Action{Type: ActExtract, Selector: "h1"}).Value; got != "Landing" {
		t.Fatalf("current tab after restart shows %v", got)
	}
	f.do(t, Action{Type: ActSwitchTab, Tab: "t1"})
	if got := f.do(t, Action{Type: ActExtract, Selector: "h1"}).Value; got != "Widgets" {
		t.Fatalf("t1 after restart shows %v", got)
	}
}

func TestBrowserCrash(t *testing.T) {
	site := testsite.New(t)
	var b *launcher.Browser
	launch := launcherFor(t)
	rec := &recorder{}
	s, err := New(Options{Audit: rec, Launch: func(ctx context.Context) (Browser, error) {
		br, err := launch(ctx)
		if err == nil {
			b = br.(*launcher.Browser)
		}
		return br, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background(), EndCompleted) })
	if _, err := s.Do(context.Background(), Action{Type: ActNavigate, URL: site.At("/")}); err != nil {
		t.Fatal(err)
	}
	proc, err := os.FindProcess(b.PID())
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, s, 15*time.Second)
	if s.EndReason() != EndBrowserCrashed {
		t.Fatalf("end reason %q, want browser_crashed", s.EndReason())
	}
	if end, _ := rec.last(EventSessionEnd); end.Reason != EndBrowserCrashed {
		t.Fatalf("end event %+v", end)
	}
}

// TestLoginCheckHTTPError: a login check whose page the site answers with
// an HTTP error fails, even with only a login wall selector (which such a
// page does not show).
func TestLoginCheckHTTPError(t *testing.T) {
	f := start(t, Options{})
	hs := newHitSite(t)
	cases := []struct {
		name, url, want string
		code            errcode.Code
	}{
		{"404 from the test site", f.site.At("/no-such-page"), "HTTP 404", errcode.InvalidAction},
		{"410", hs.on("127.0.0.1", "/status?code=410"), "HTTP 410", errcode.InvalidAction},
		{"503 maintenance page", hs.on("127.0.0.1", "/status?code=503"), "HTTP 503", errcode.Timeout},
		{"503 without a body", hs.on("127.0.0.1", "/status?code=503&empty=1"), "HTTP 503", errcode.Timeout},
		{"500", hs.on("127.0.0.1", "/status?code=500"), "HTTP 500", errcode.Timeout},
		{"429", hs.on("127.0.0.1", "/status?code=429"), "HTTP 429", errcode.Timeout},
		{"403", hs.on("127.0.0.1", "/status?code=403"), "HTTP 403", errcode.HumanRequired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, check := range []Action{
				{Type: ActLoginCheck, URL: c.url, LoginWallSelector: "form#login"},
				{Type: ActLoginCheck, URL: c.url, LoggedInSelector: "#status", LoginWallSelector: "form#login"},
			} {
				_, err := f.s.Do(context.Background(), check)
				wantCode(t, err, c.code)
				if !strings.Contains(err.Error(), c.want) || errcode.HintOf(err) == "" {
					t.Fatalf("error %q (hint %q) does not name %s", err, errcode.HintOf(err), c.want)
				}
				if err := f.s.Resume(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	// A check whose URL differs from the page's only in the fragment (a
	// hash-routed app) loads nothing and sees no response: the document's
	// own status still fails it.
	errPage := hs.on("127.0.0.1", "/status?code=503")
	f.do(t, Action{Type: ActNavigate, URL: errPage + "#a"})
	_, err := f.s.Do(context.Background(), Action{Type: ActLoginCheck, URL: errPage + "#b", LoginWallSelector: "form#login"})
	wantCode(t, err, errcode.Timeout)
	if !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("fragment-only check: %v, want it to name HTTP 503", err)
	}
	if err := f.s.Resume(); err != nil {
		t.Fatal(err)
	}
	// A page that loads fine still passes.
	f.do(t, Action{Type: ActLoginCheck, URL: hs.on("127.0.0.1", "/status?code=200"), LoginWallSelector: "form#login"})
}

// closedPort is a port on 127.0.0.1 that nothing listens on: one the
// kernel just gave and took back.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestUnreachableSite: a page whose site cannot be reached (a host name
// that does not resolve, a refused connection) fails the action with
// timeout, naming Chrome's error and saying to check the URL and the
// network, not internal_error; the session goes on. A host the policy
// refuses, which the host resolver rules also make fail to resolve, is
// still domain_blocked.
func TestUnreachableSite(t *testing.T) {
	refused := "http://" + closedPort(t) + "/login"
	// .invalid never resolves (RFC 6761); Debian Chromium answers
	// ERR_NAME_NOT_RESOLVED for it at once, with or without a network.
	unresolved := "http://director-test.invalid/login"
	cases := []struct {
		name string
		a    Action
		want string // Chrome's error, in the message
	}{
		{"navigate, connection refused", Action{Type: ActNavigate, URL: refused}, "the connection was refused: page load error net::ERR_CONNECTION_REFUSED"},
		{"navigate, name not resolved", Action{Type: ActNavigate, URL: unresolved}, "its host name does not resolve: page load error net::ERR_NAME_NOT_RESOLVED"},
		{"open_tab, connection refused", Action{Type: ActOpenTab, URL: refused}, "net::ERR_CONNECTION_REFUSED"},
		{"login_check, name not resolved", Action{Type: ActLoginCheck, URL: unresolved, LoginWallSelector: "form#login"}, "net::ERR_NAME_NOT_RESOLVED"},
	}
	// A blocklist, so that Chrome runs with host resolver rules, as a
	// workflow with one does.
	f := start(t, Options{Policy: Policy{Blocklist: []string{"blocked.invalid"}}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.s.Do(context.Background(), c.a)
			wantCode(t, err, errcode.Timeout)
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "cannot load "+c.a.URL) {
				t.Fatalf("error %q does not name %s and %s", err, c.a.URL, c.want)
			}
			if h := errcode.HintOf(err); !strings.HasPrefix(h, "the site could not be reached: check the URL (host and port)") {
				t.Fatalf("hint %q", h)
			}
			if f.s.Err() != nil || f.s.Info().State != StateActive {
				t.Fatalf("the session did not survive: %v (state %s)", f.s.Err(), f.s.Info().State)
			}
		})
	}
	// A port Chrome never loads is the URL's fault: invalid_action.
	_, err := f.s.Do(context.Background(), Action{Type: ActNavigate, URL: "http://127.0.0.1:6000/"})
	wantCode(t, err, errcode.InvalidAction)
	if h := errcode.HintOf(err); !strings.Contains(err.Error(), "Chrome refuses its port") || !strings.HasPrefix(h, "use another port") {
		t.Fatalf("unsafe port: %v (hint %q)", err, h)
	}

	blocked := []struct {
		name string
		act  func(f *fixture) Action
	}{
		{"navigate to a refused host", func(f *fixture) Action {
			return Action{Type: ActNavigate, URL: "http://www.blocked.invalid/"}
		}},
		{"redirect to a refused host", func(f *fixture) Action {
			return Action{Type: ActNavigate, URL: f.site.At("/redirect?to=" + url.QueryEscape("http://www.blocked.invalid/"))}
		}},
	}
	for _, c := range blocked {
		t.Run(c.name, func(t *testing.T) {
			f := start(t, Options{Policy: Policy{Blocklist: []string{"blocked.invalid"}}})
			_, err := f.s.Do(context.Background(), c.act(f))
			wantCode(t, err, errcode.DomainBlocked)
			waitDone(t, f.s, 10*time.Second)
			if f.s.EndReason() != EndDomainBlocked {
				t.Fatalf("end reason %q", f.s.EndReason())
			}
		})
	}
}

// TestStepMistakes: a step's own bad selector or expression is
// invalid_action naming it, not internal_error.
func TestStepMistakes(t *testing.T) {
	f := start(t, Options{})
	f.do(t, Action{Type: ActNavigate, URL: f.site.At("/widgets")})
	cyclic := `(() => { const o = {}; o.self = o; return o; })()`
	cases := []struct {
		name string
		a    Action
		want string // in the message
	}{
		{"click", Action{Type: ActClick, Selector: "###"}, `"###" is not a valid CSS selector`},
		{"type", Action{Type: ActType, Selector: "#name[", Text: "x"}, `"#name[" is not a valid CSS selector`},
		{"extract", Action{Type: ActExtract, Selector: "###"}, `"###" is not a valid CSS selector`},
		{"wait_for", Action{Type: ActWaitFor, Selector: "###"}, `"###" is not a valid CSS selector`},
		{"wait_for hidden", Action{Type: ActWaitFor, Selector: "a[", State: "hidden"}, `"a[" is not a valid CSS selector`},
		{"assert", Action{Type: ActAssert, Selector: "###", Text: "x"}, `"###" is not a valid CSS selector`},
		{"login_check", Action{Type: ActLoginCheck, URL: f.site.At("/widgets"), LoginWallSelector: "###"}, `"###" is not a valid CSS selector`},
		{"type into a heading", Action{Type: ActType, Selector: "h1", Text: "x"}, `"h1" cannot take keys: the element it matches is not focusable`},
		{"press on a heading", Action{Type: ActPress, Selector: "#out", Key: "Enter"}, `"#out" cannot take keys`},
		{"select on an input", Action{Type: ActSelect, Selector: "#name", Value: "x"}, "#name is an <input>, not a <select>"},
		{"evaluate cyclic", Action{Type: ActEvaluate, Expression: cyclic}, "cannot be returned as JSON"},
		{"evaluate window", Action{Type: ActEvaluate, Expression: `window`}, "cannot be returned as JSON"},
		{"evaluate node", Action{Type: ActEvaluate, Expression: `document.body`}, "returned a DOM node (HTMLBodyElement)"},
		{"evaluate awaited node", Action{Type: ActEvaluate, Expression: `Promise.resolve(document.documentElement)`}, "returned a DOM node"},
		{"evaluate BigInt", Action{Type: ActEvaluate, Expression: `2n ** 70n`}, "returned a BigInt (1180591620717411303424n), which has no JSON value"},
		{"evaluate BigInt inside", Action{Type: ActEvaluate, Expression: `({n: 1n})`}, "cannot be returned as JSON: TypeError: Do not know how to serialize a BigInt"},
		{"evaluate Map", Action{Type: ActEvaluate, Expression: `new Map([["a", 1]])`}, "returned a Map, which has no JSON value"},
		{"evaluate Set", Action{Type: ActEvaluate, Expression: `new Set([1])`}, "returned a Set"},
		{"evaluate typed array", Action{Type: ActEvaluate, Expression: `new Uint8Array(3)`}, "returned binary data (Uint8Array)"},
		{"evaluate Error", Action{Type: ActEvaluate, Expression: `new TypeError("x")`}, "returned an Error (TypeError)"},
		{"evaluate function", Action{Type: ActEvaluate, Expression: `() => 1`}, "returned a function"},
		{"evaluate Symbol", Action{Type: ActEvaluate, Expression: `Symbol("s")`}, "returned a Symbol"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.a.Timeout = 2 * time.Second
			_, err := f.s.Do(context.Background(), c.a)
			wantCode(t, err, errcode.InvalidAction)
			if !strings.Contains(err.Error(), c.want) || errcode.HintOf(err) == "" {
				t.Fatalf("error %q (hint %q) does not say %s", err, errcode.HintOf(err), c.want)
			}
			if f.s.Err() != nil || f.s.Info().State != StateActive {
				t.Fatalf("the session did not survive: %v", f.s.Err())
			}
		})
	}
}

// TestInterrupted: a step whose caller cancels its context (Ctrl-C) ends
// with interrupted, not internal_error or timeout.
func TestInterrupted(t *testing.T) {
	f := start(t, Options{})
	f.do(t, Action{Type: ActNavigate, URL: f.site.At("/widgets")})
	cases := []struct {
		name string
		a    Action
	}{
		{"wait_for", Action{Type: ActWaitFor, Selector: "#never"}},
		{"click", Action{Type: ActClick, Selector: "#never"}},
		{"sleep", Action{Type: ActSleep, Duration: time.Minute}},
		{"navigate", Action{Type: ActNavigate, URL: f.site.At("/slow?ms=20000")}},
		{"evaluate", Action{Type: ActEvaluate, Expression: `new Promise(() => {})`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			_, err := f.s.Do(ctx, c.a)
			wantCode(t, err, errcode.Interrupted)
			if f.s.Err() != nil {
				t.Fatalf("the session ended: %v", f.s.Err())
			}
		})
	}
	// A caller's deadline is a timeout, not an interruption.
	for _, a := range []Action{{Type: ActSleep, Duration: time.Minute}, {Type: ActEvaluate, Expression: `new Promise(() => {})`}} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := f.s.Do(ctx, a)
		cancel()
		if errcode.Of(err) != errcode.Timeout {
			t.Errorf("%s past the caller's deadline: %v [%s], want %s", a.Type, err, errcode.Of(err), errcode.Timeout)
		}
	}
}

// TestInterruptedStart: Ctrl-C while Chrome starts ends the session
// user_stopped with interrupted, not browser_launch_failed, and the audit
// trail says so.
func TestInterruptedStart(t *testing.T) {
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	launch := launcherWithRules(t, nil)
	s, err := New(Options{Audit: rec, Launch: func(lctx context.Context) (Browser, error) {
		cancel() // the signal arrives as Chrome starts
		return launch(lctx)
	}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start(ctx)
	wantCode(t, err, errcode.Interrupted)
	if info := s.Info(); info.State != StateClosed || info.EndReason != EndUserStopped {
		t.Fatalf("session %+v, want closed user_stopped", info)
	}
	end, ok := rec.last(EventSessionEnd)
	if !ok || end.Reason != EndUserStopped || end.Code != errcode.Interrupted {
		t.Fatalf("session_end event %+v (found %v)", end, ok)
	}
	if strings.Contains(err.Error(), "chrome") || strings.Contains(errcode.HintOf(err), "CHROME_PATH") {
		t.Errorf("the error blames the launch: %v (hint %q)", err, errcode.HintOf(err))
	}
}

// TestStepOnAnErrorPage: a step that waits in vain on a page the site
// answered with an HTTP error says so, with a hint for that status: it
// only said to raise the timeout, and never named the 503.
func TestStepOnAnErrorPage(t *testing.T) {
	f := start(t, Options{})
	hs := newHitSite(t)
	for _, c := range []struct {
		name, url, want, hint string
	}{
		{"503 maintenance page", hs.on("127.0.0.1", "/status?code=503"), "answered HTTP 503 to this page", "run again later"},
		{"404", f.site.At("/no-such-page"), "answered HTTP 404 to this page", "check the URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.do(t, Action{Type: ActNavigate, URL: c.url})
			_, err := f.s.Do(context.Background(), Action{Type: ActWaitFor, Selector: "#never", Timeout: 500 * time.Millisecond})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(errcode.HintOf(err), c.hint) {
				t.Fatalf("error %v (hint %q), want it to say %q with %q", err, errcode.HintOf(err), c.want, c.hint)
			}
		})
	}
	// A page that answered fine gets no such words.
	f.do(t, Action{Type: ActNavigate, URL: f.site.At("/widgets")})
	_, err := f.s.Do(context.Background(), Action{Type: ActWaitFor, Selector: "#never", Timeout: 500 * time.Millisecond})
	if err == nil || strings.Contains(err.Error(), "answered HTTP") {
		t.Fatalf("error on a good page: %v", err)
	}
}
