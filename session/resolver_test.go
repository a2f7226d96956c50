package session

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"director/internal/testsite"
)

// chromeRefuses says what Chrome does with host (on port) under host
// resolver rules of the kinds ResolverRules writes (Chromium's
// net/base/host_mapping_rules.cc, and checked with Debian Chromium): a host
// that an EXCLUDE pattern matches is never mapped; otherwise the first MAP
// rule whose pattern matches maps it, here always to ~NOTFOUND. A pattern
// that does not match the host is tried against "host:port" too, and host
// names of IPv6 addresses come without brackets ("[host]:port" in the
// second try).
func chromeRefuses(t *testing.T, rules []string, host, port string) bool {
	t.Helper()
	hostPort := host + ":" + port
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	match := func(pattern string) bool { return matchPattern(pattern, host) || matchPattern(pattern, hostPort) }
	var maps []string
	for _, r := range rules {
		f := strings.Fields(r)
		switch {
		case len(f) == 2 && f[0] == "EXCLUDE":
			if match(f[1]) {
				return false
			}
		case len(f) == 3 && f[0] == "MAP" && f[2] == "~NOTFOUND":
			maps = append(maps, f[1])
		default:
			t.Fatalf("rule %q is not one ResolverRules writes", r)
		}
	}
	for _, m := range maps {
		if match(m) {
			return true
		}
	}
	return false
}

// matchPattern is base::MatchPattern without escapes: * matches any run of
// characters, ? any one.
func matchPattern(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if matchPattern(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && matchPattern(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && matchPattern(pattern[1:], s[1:])
}

// TestResolverRulesMatchCheck: the host resolver rules of a policy refuse
// no host that Check allows (they would break a page the workflow may
// visit), and every host it refuses where the entry can be spelled in
// Chrome's patterns. An allowlist entry that cannot be spelled lets more
// names resolve, never fewer.
func TestResolverRulesMatchCheck(t *testing.T) {
	patterns := []string{"example.com", "*.ads.net", "ads?.example.net", "[ab]tracker.test", "[^x]y.test", "127.0.0.2", "127.0.0.*", "localhost", "*",
		"10.0.0.[0-9a-f]", "1[^x]7.0.0.1", "a,b.test", "[a-c,]x.test", `\a\*.test`, "*1", "*[0-9]*", "10.0.0.1?", "?", "ads.*", "x?"}
	hosts := []string{"example.com", "www.example.com", "example.com.", "www.example.com.", "notexample.com", "example.com.evil", "a.b.ads.net", "ads.net",
		"ads1.example.net", "ads.example.net", "ads1.example.net.", "atracker.test", "ctracker.test", "zy.test", "xy.test", "127.0.0.2", "[::ffff:7f00:2]",
		"[::ffff:7f00:3]", "127.0.0.20", "localhost", "localhost.", "x.localhost", "other.test", "10.0.0.1", "10.0.0.a", "10.0.0.g", "[::ffff:a00:1]",
		"127.0.0.1", "[::ffff:7f00:1]", "a,b.test", "a.b.test", "ax.test", ",x.test", "dx.test", "a*.test", "ab.test", "x1", "ads.example", "x", "xy"}
	// Chrome tries a pattern on "host:port" too: ports that a glob's tail
	// could match (18081 ends in 1) and one it could not.
	var hostPorts [][2]string
	for _, h := range hosts {
		for _, port := range []string{"18081", "443", "7"} {
			hostPorts = append(hostPorts, [2]string{h, port})
		}
	}
	for _, p := range patterns {
		_, exact := resolverPatterns(p)
		for _, kind := range []string{"blocklist", "allowlist"} {
			policy := Policy{Blocklist: []string{p}}
			if kind == "allowlist" {
				policy = Policy{Allowlist: []string{p}}
			}
			rules := policy.ResolverRules()
			for _, hp := range hostPorts {
				h, port := hp[0], hp[1]
				refused := policy.Check("wss://"+h+"/socket") != ""
				got := chromeRefuses(t, rules, h, port)
				// An IPv4 glob refuses (allows) every IPv4-mapped IPv6
				// address, as the WebSocket rules do.
				mapped := ipv4Glob(p) && strings.HasPrefix(h, "[::ffff:")
				if got && !refused && !(mapped && kind == "blocklist") {
					t.Errorf("%s %q, host %q port %s: the resolver rules refuse a host the policy allows\n%s", kind, p, h, port, strings.Join(rules, "\n"))
				}
				if refused && !got && exact && !(mapped && kind == "allowlist") {
					t.Errorf("%s %q, host %q port %s: the policy refuses it, the resolver rules do not\n%s", kind, p, h, port, strings.Join(rules, "\n"))
				}
			}
		}
	}
	if got := (Policy{}).ResolverRules(); got != nil {
		t.Errorf("an empty policy gives rules: %q", got)
	}
	// A blocklist entry inside an allowlist entry: Chrome applies EXCLUDE
	// before every MAP rule, so that entry is left to the other checks.
	got := Policy{Allowlist: []string{"example.com", "127.0.0.1"}, Blocklist: []string{"bad.example.com", "[^x]y.test"}}.ResolverRules()
	want := []string{
		"MAP bad.example.com ~NOTFOUND", "MAP *.bad.example.com ~NOTFOUND", "MAP bad.example.com. ~NOTFOUND", "MAP *.bad.example.com. ~NOTFOUND",
		"MAP * ~NOTFOUND",
		"EXCLUDE example.com", "EXCLUDE *.example.com", "EXCLUDE example.com.", "EXCLUDE *.example.com.",
		"EXCLUDE 127.0.0.1", "EXCLUDE ::ffff:7f00:1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rules:\n%s", strings.Join(got, "\n"))
	}
}

// TestResolverRulesRefuseOtherTargets: a WebSocket to a refused host is
// refused wherever the page starts it, also where the per-tab checks do not
// reach because Chrome runs the script that opens it as a target of its
// own: a dedicated worker (and its own worker), a shared worker, a service
// worker, a cross-site frame (and a worker of that frame), and a popup
// whose page (or its worker) opens it as it loads. The host resolver rules
// refuse them: the server never sees the upgrade, the page sees the
// WebSocket fail, and the session goes on. With another host blocked, each
// WebSocket reaches the server, so the pages do open them.
func TestResolverRulesRefuseOtherTargets(t *testing.T) {
	cases := []struct {
		name      string
		page      string // on 127.0.0.1
		popup     string // this opens the page that opens the WebSocket, as t2
		path      string // the WebSocket's path on BlockedHost
		allowlist bool   // run with an allowlist too
	}{
		{name: "dedicated worker", page: "/ws-worker?kind=dedicated", path: "/ws/dedicated", allowlist: true},
		{name: "worker of a worker", page: "/ws-worker?kind=nested", path: "/ws/nested"},
		{name: "shared worker", page: "/ws-worker?kind=shared", path: "/ws/shared", allowlist: true},
		{name: "service worker", page: "/ws-worker?kind=service", path: "/ws/service"},
		{name: "cross-site frame", page: "/ws-frame?in=page", path: "/ws/frame", allowlist: true},
		{name: "worker of a cross-site frame", page: "/ws-frame?in=worker", path: "/ws/frame-worker"},
		{name: "popup as it loads", page: "/ws-popup", popup: "#open", path: "/ws/popup", allowlist: true},
		{name: "target=_blank popup as it loads", page: "/ws-popup", popup: "#link", path: "/ws/popup-link"},
		{name: "worker of a popup", page: "/ws-popup", popup: "#open-worker", path: "/ws/dedicated", allowlist: true},
	}
	policies := []struct {
		name    string
		policy  Policy
		blocked bool // BlockedHost is refused
	}{
		{"", Policy{Blocklist: []string{testsite.BlockedHost}}, true},
		{"/allowlist", Policy{Allowlist: []string{"127.0.0.1", "localhost"}}, true},
		{"/another host blocked", Policy{Blocklist: []string{"other.test"}}, false},
	}
	for _, c := range cases {
		for _, p := range policies {
			if p.policy.Allowlist != nil && !c.allowlist {
				continue
			}
			t.Run(c.name+p.name, func(t *testing.T) {
				site := newHitSite(t)
				f := start(t, Options{Policy: p.policy})
				f.do(t, Action{Type: ActNavigate, URL: site.on("127.0.0.1", c.page)})
				// Chromium 156 itself sometimes fails the WebSocket that a
				// popup keeping its opener opens as it loads, before any
				// request (1 to 5% of runs under load, also with no DevTools
				// client at all; docs/design-notes.md, "A popup's WebSocket
				// that Chromium fails"). Where the host is not refused, a
				// popup whose WebSocket failed without reaching the site is
				// opened again, up to popupTries times.
				const popupTries = 5
				var status string
				for try := 1; ; try++ {
					on := ""
					if c.popup != "" {
						f.do(t, Action{Type: ActClick, Selector: c.popup})
						on = fmt.Sprintf("t%d", 1+try) // handles count up from t2
					}
					f.do(t, Action{Type: ActWaitFor, Tab: on, Selector: "#status", State: "visible"})
					eventually(t, "the page to say what became of its WebSocket", func() bool {
						res, err := f.s.Do(t.Context(), Action{Type: ActExtract, Tab: on, Selector: "#status"})
						status, _ = res.Value.(string)
						return err == nil && status != "loading"
					})
					// The site counts a request before it answers, so a
					// WebSocket that reached it is counted by the time the
					// page sees it fail.
					if p.blocked || c.popup == "" || status != "error" || site.hitsOn(testsite.BlockedHost)[c.path] > 0 || try == popupTries {
						break
					}
					t.Logf("try %d: the popup's WebSocket failed without reaching the site; opening the popup again", try)
				}
				if !p.blocked {
					eventually(t, fmt.Sprintf("the WebSocket to reach %s (the page said %q; the site saw %v)", testsite.BlockedHost, status, site.hitsOn(testsite.BlockedHost)),
						func() bool { return site.hitsOn(testsite.BlockedHost)[c.path] > 0 })
					return
				}
				if status == "open" {
					t.Fatalf("the WebSocket opened")
				}
				// Give a WebSocket that got out a moment to arrive.
				time.Sleep(300 * time.Millisecond)
				if hits := site.hitsOn(testsite.BlockedHost); len(hits) != 0 {
					t.Fatalf("the refused host got requests: %v (the page says %q)", hits, status)
				}
				if err := f.s.Err(); err != nil || f.s.Info().State != StateActive {
					t.Fatalf("a refused WebSocket ended the session: %v (%s)", err, f.s.Info().State)
				}
				f.do(t, Action{Type: ActNavigate, URL: site.on("127.0.0.1", "/status?code=200")})
			})
		}
	}
}

// TestResolverRulesSparePorts: Chrome also tries a rule's pattern against
// "host:port", so a blocklist glob that ends like the site's port (*1 for
// port 18081) must not make Chrome refuse a host the policy allows: the
// page loads.
func TestResolverRulesSparePorts(t *testing.T) {
	site := newHitSite(t)
	digit := strconv.Itoa(site.port % 10)
	for _, glob := range []string{"*" + digit, "*[" + digit + "]", "*" + digit + "*"} {
		t.Run(glob, func(t *testing.T) {
			f := start(t, Options{Policy: Policy{Blocklist: []string{glob}}})
			u := site.on("localhost", "/status?code=200")
			if why := f.s.o.Policy.Check(u); why != "" {
				t.Fatalf("the policy refuses %s: %s", u, why)
			}
			f.do(t, Action{Type: ActNavigate, URL: u})
			if got := f.do(t, Action{Type: ActExtract, Selector: "#status"}).Value; got != "OK" {
				t.Fatalf("the page says %v", got)
			}
		})
	}
}
