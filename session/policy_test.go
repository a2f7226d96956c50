package session

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"testing"
	"time"

	"director/errcode"
	"director/internal/testsite"
)

// TestWebSocketRulesMatchCheck holds the WebSocket rules (which Chrome
// applies on its own, without asking director) to exactly the hosts
// Policy.Check refuses, and the Fetch patterns to at least those.
func TestWebSocketRulesMatchCheck(t *testing.T) {
	patterns := []string{"example.com", "*.ads.net", "ads?.example.net", "[ab]tracker.test", "[^x]y.test", "127.0.0.2", "127.0.0.*", "localhost", "*",
		"10.0.0.[0-9a-f]", "1[^x]7.0.0.1"}
	hosts := []string{"example.com", "www.example.com", "example.com.", "notexample.com", "example.com.evil", "a.b.ads.net", "ads.net",
		"ads1.example.net", "ads.example.net", "atracker.test", "ctracker.test", "zy.test", "xy.test", "127.0.0.2", "[::ffff:7f00:2]",
		"[::ffff:7f00:3]", "127.0.0.20", "localhost", "localhost.", "x.localhost", "other.test", "10.0.0.1", "[::ffff:a00:1]", "127.0.0.1", "[::ffff:7f00:1]"}
	for _, p := range patterns {
		rules := Policy{Blocklist: []string{p}}.webSocketRules()
		var res []*regexp.Regexp
		for _, r := range rules {
			if !r.Offline || !strings.HasPrefix(r.URLPattern, "ws") || !strings.HasSuffix(r.URLPattern, ":*/*") {
				t.Fatalf("%s: rule %+v", p, r)
			}
			if h, ok := strings.CutPrefix(r.URLPattern, "ws://"); ok {
				res = append(res, urlPatternHost(t, strings.TrimSuffix(h, ":*/*")))
			}
		}
		for _, h := range hosts {
			blocked := Policy{Blocklist: []string{p}}.Check("ws://"+h+"/socket") != ""
			var got bool
			for _, re := range res {
				got = got || re.MatchString(h)
			}
			// An IPv4 glob refuses every mapped IPv6 address: no glob can
			// spell their hex. Refusing more is safe; refusing less is not.
			overBlock := got && !blocked && ipv4Glob(p) && strings.HasPrefix(h, "[::ffff:")
			if got != blocked && !overBlock {
				t.Errorf("pattern %q host %q: websocket rules %v match=%v, Check blocks=%v", p, h, res, got, blocked)
			}
			if !blocked {
				continue
			}
			var pre bool
			for _, fp := range (Policy{Blocklist: []string{p}}).requestPatterns()[1:] {
				// Fetch globs know * and ? only: path.Match does the same
				// on a URL without / and with [ quoted.
				g := strings.ReplaceAll(fp.URLPattern, "[", `\[`)
				if ok, _ := path.Match(g, strings.ReplaceAll("http://"+h+":1/x?y", "/", "|")); ok {
					pre = true
				}
			}
			if !pre {
				t.Errorf("pattern %q host %q: no Fetch pattern pauses the request", p, h)
			}
		}
	}
	allow := Policy{Allowlist: []string{"example.com"}, Blocklist: []string{"bad.example.com"}}.webSocketRules()
	var got []string
	for _, r := range allow {
		got = append(got, fmt.Sprintf("%s offline=%v", r.URLPattern, r.Offline))
	}
	want := []string{
		"ws://{*.}?bad.example.com{.}?:*/* offline=true", "wss://{*.}?bad.example.com{.}?:*/* offline=true",
		"ws://{*.}?example.com{.}?:*/* offline=false", "wss://{*.}?example.com{.}?:*/* offline=false",
		"ws://*{.}?:*/* offline=true", "wss://*{.}?:*/* offline=true",
		`ws://[\:\:ffff\:*]:*/* offline=true`, `wss://[\:\:ffff\:*]:*/* offline=true`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("allowlist rules:\n%s", strings.Join(got, "\n"))
	}
	// An allow rule never lets through more than the allowlist: not every
	// mapped IPv6 address for an IPv4 glob, not a widened glob.
	for _, r := range (Policy{Allowlist: []string{"10.0.0.*"}}).webSocketRules() {
		if !r.Offline && strings.Contains(r.URLPattern, "ffff") {
			t.Errorf("allowlist 10.0.0.*: rule %s lets through every mapped IPv6 address", r.URLPattern)
		}
	}
	// Eight ?s are too many to spell out: widened, the rule would also let
	// through longer names, so there is none (such WebSockets are refused).
	for _, r := range (Policy{Allowlist: []string{"????????.test"}}).webSocketRules() {
		if !r.Offline {
			t.Errorf("allowlist ????????.test: rule %s lets through hosts the allowlist refuses", r.URLPattern)
		}
	}
}

// urlPatternHost turns a hostname pattern of the URLPattern subset that
// hostPatterns writes ({*.}?, {.}?, *, \-escapes, literals) into an
// anchored regular expression.
func urlPatternHost(t *testing.T, p string) *regexp.Regexp {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case strings.HasPrefix(p[i:], "{*.}?"):
			b.WriteString(`(?:.*\.)?`)
			i += 4
		case strings.HasPrefix(p[i:], "{.}?"):
			b.WriteString(`\.?`)
			i += 3
		case p[i] == '*':
			b.WriteString(".*")
		case p[i] == '\\' && i+1 < len(p):
			i++
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		case strings.ContainsRune("{}()?+:", rune(p[i])):
			t.Fatalf("unexpected URLPattern syntax in %q", p)
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	return regexp.MustCompile("^(?:" + b.String() + ")$")
}

// TestBlocklistSubresources loads a page on 127.0.0.1 whose image, script,
// fetch(), beacon, WebSocket and worker's fetch() all point at localhost,
// then fetch()es localhost from an evaluate step. A refused host gets no
// request at all, and the session goes on: only documents end it.
func TestBlocklistSubresources(t *testing.T) {
	subresources := []string{"/image.png", "/script.js", "/fetch", "/beacon", "/websocket", "/worker-fetch", "/from-evaluate"}
	cases := []struct {
		name    string
		policy  Policy
		blocked bool // localhost is refused
	}{
		{"blocklist", Policy{Blocklist: []string{"localhost"}}, true},
		{"blocklist glob", Policy{Blocklist: []string{"localhos[st]", "*.ads.test"}}, true},
		{"allowlist", Policy{Allowlist: []string{"127.0.0.1"}}, true},
		{"another host blocked", Policy{Blocklist: []string{testsite.BlockedHost}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			site := newHitSite(t)
			f := start(t, Options{Policy: c.policy})
			f.do(t, Action{Type: ActNavigate, URL: site.on("127.0.0.1", "/subresources")})
			f.do(t, Action{Type: ActWaitFor, Selector: "#status", State: "visible"})
			f.do(t, Action{Type: ActAssert, Selector: "#status", Text: "done"})
			got := f.do(t, Action{Type: ActEvaluate, Expression: `fetch(` + js(site.on("localhost", "/from-evaluate")) + `, {mode: "no-cors"}).then(() => "loaded", () => "failed")`}).Value
			if c.blocked {
				// A beacon may still be on its way: give it a moment.
				time.Sleep(300 * time.Millisecond)
				if hits := site.hitsOn("localhost"); len(hits) != 0 {
					t.Fatalf("the refused host got requests: %v", hits)
				}
				if got != "failed" {
					t.Fatalf("fetch() from evaluate: %v", got)
				}
				if err := f.s.Err(); err != nil || f.s.Info().State != StateActive {
					t.Fatalf("a blocked subresource ended the session: %v (%s)", err, f.s.Info().State)
				}
				kinds := map[string]bool{}
				for _, e := range f.rec.all() {
					if e.Code == errcode.DomainBlocked && e.Domain == "localhost" {
						kinds[e.Action+" "+strings.TrimSuffix(strings.Fields(e.Detail)[0], ":")] = true // "request image", "websocket websocket"
					}
				}
				for _, want := range []string{"request image", "request script", "request xhr", "request ping", "websocket websocket"} {
					if !kinds[want] {
						t.Errorf("no audit event %q among %v", want, kinds)
					}
				}
				// The session still works.
				f.do(t, Action{Type: ActNavigate, URL: site.on("127.0.0.1", "/status?code=200")})
				return
			}
			eventually(t, "every request to reach localhost", func() bool {
				hits := site.hitsOn("localhost")
				for _, p := range subresources {
					if hits[p] == 0 {
						return false
					}
				}
				return true
			})
			if got != "loaded" {
				t.Fatalf("fetch() from evaluate: %v", got)
			}
		})
	}
}

// TestBlocklistSubresourceRedirect: an allowed image that redirects to a
// refused host is failed at the redirect.
func TestBlocklistSubresourceRedirect(t *testing.T) {
	site := newHitSite(t)
	ts := testsite.New(t)
	f := start(t, Options{Policy: Policy{Blocklist: []string{"localhost"}}})
	f.do(t, Action{Type: ActNavigate, URL: ts.At("/landing")})
	got := f.do(t, Action{Type: ActEvaluate, Expression: fmt.Sprintf(`fetch(%s).then(() => "loaded", () => "failed")`,
		js(ts.At("/redirect?to="+site.on("localhost", "/redirected"))))}).Value
	if got != "failed" || len(site.hitsOn("localhost")) != 0 {
		t.Fatalf("fetch through a redirect: %v, hits %v", got, site.hitsOn("localhost"))
	}
	if f.s.Err() != nil {
		t.Fatal(f.s.Err())
	}
}
