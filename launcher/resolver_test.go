package launcher

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

func TestResolverRulesMerge(t *testing.T) {
	none := func(string) string { return "" }
	cases := []struct {
		name      string
		extra     []string
		rules     []string
		env       map[string]string
		wantExtra []string
		want      string
	}{
		{name: "none", extra: []string{"--lang=en"}, wantExtra: []string{"--lang=en"}},
		{name: "only the caller's", rules: []string{"MAP a.test ~NOTFOUND", "MAP *.a.test ~NOTFOUND"},
			want: "MAP a.test ~NOTFOUND, MAP *.a.test ~NOTFOUND"},
		{name: "only extra's", extra: []string{"--host-resolver-rules=MAP x.test 127.0.0.1", "--lang=en"},
			wantExtra: []string{"--lang=en"}, want: "MAP x.test 127.0.0.1"},
		{name: "the caller's first, then extra's in order",
			extra: []string{"--host-resolver-rules=MAP x.test 127.0.0.1", "--lang=en", "--host-resolver-rules=MAP y.test 127.0.0.2"},
			rules: []string{"MAP x.test ~NOTFOUND"}, wantExtra: []string{"--lang=en"},
			want: "MAP x.test ~NOTFOUND, MAP x.test 127.0.0.1, MAP y.test 127.0.0.2"},
		{name: "proxies stay resolvable", rules: []string{"MAP * ~NOTFOUND"},
			env: map[string]string{"https_proxy": "http://Proxy.Corp:3128", "HTTP_PROXY": "proxy.corp:8080", "all_proxy": "socks5://[::1]:1080",
				"auto_proxy": "http://pac.corp/proxy.pac", "no_proxy": "nothing.test"},
			extra:     []string{"--proxy-server=http=p1.corp:80;https=https://p2.corp", "--proxy-pac-url=http://pac2.corp/x.pac"},
			wantExtra: []string{"--proxy-server=http=p1.corp:80;https=https://p2.corp", "--proxy-pac-url=http://pac2.corp/x.pac"},
			want:      "MAP * ~NOTFOUND, EXCLUDE ::1, EXCLUDE proxy.corp, EXCLUDE pac.corp, EXCLUDE p1.corp, EXCLUDE p2.corp, EXCLUDE pac2.corp"},
		{name: "no proxy exclusions for extra's rules alone", extra: []string{"--host-resolver-rules=MAP x.test 127.0.0.1"},
			env: map[string]string{"http_proxy": "proxy.corp:8080"}, want: "MAP x.test 127.0.0.1"},
		{name: "a proxy host a rule cannot hold", rules: []string{"MAP * ~NOTFOUND"}, env: map[string]string{"http_proxy": "http://a*b:1", "https_proxy": "direct://"},
			want: "MAP * ~NOTFOUND"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			getenv := none
			if c.env != nil {
				getenv = func(k string) string { return c.env[k] }
			}
			extra, got := resolverRules(c.extra, c.rules, getenv)
			if got != c.want {
				t.Errorf("rules\n got %q\nwant %q", got, c.want)
			}
			if !slices.Equal(extra, c.wantExtra) {
				t.Errorf("extra flags %q, want %q", extra, c.wantExtra)
			}
		})
	}
	// Args gives Chrome one flag.
	args := Args(Options{HostResolverRules: []string{"MAP a.test ~NOTFOUND"}, ExtraFlags: []string{"--host-resolver-rules=MAP b.test 127.0.0.1"}}, "/p")
	n := 0
	for _, a := range args {
		if strings.HasPrefix(a, "--host-resolver-rules=") {
			n++
		}
	}
	if n != 1 || !slices.Contains(args, "--host-resolver-rules=MAP a.test ~NOTFOUND, MAP b.test 127.0.0.1") {
		t.Errorf("args %q", args)
	}
}

// TestResolverRulesKeepTheProxy: with rules that refuse every host name
// but one (an allowlist), Chrome behind a proxy named in its environment
// still reaches the allowed site through the proxy: the proxy's own host
// name stays resolvable.
func TestResolverRulesKeepTheProxy(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><p id="where">%s</p>`, r.Host)
	}))
	t.Cleanup(site.Close)
	backend, err := url.Parse(site.URL)
	if err != nil {
		t.Fatal(err)
	}
	var proxied atomic.Int32
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		proxied.Add(1)
		r.Out.URL.Scheme, r.Out.URL.Host = "http", backend.Host // app.test lives on the test's server
		r.Out.Host = r.In.Host
	}})
	t.Cleanup(proxy.Close)
	_, port, _ := strings.Cut(strings.TrimPrefix(proxy.URL, "http://"), ":")
	// Chrome goes around a proxy for loopback names, so the site is
	// app.test (which only the proxy knows) and the proxy "localhost".
	t.Setenv("http_proxy", "http://localhost:"+port)
	t.Setenv("no_proxy", "")
	b, err := Launch(testCtx(t), Options{ChromePath: requireChrome(t), Headless: true, Log: testLog(t),
		HostResolverRules: []string{"MAP * ~NOTFOUND", "EXCLUDE app.test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeNow(t, b)
	_, sitePort, _ := strings.Cut(backend.Host, ":")
	where := text(t, b, "http://app.test:"+sitePort+"/", "#where")
	if where != "app.test:"+sitePort || proxied.Load() == 0 {
		t.Fatalf("the page says %q, the proxy carried %d requests", where, proxied.Load())
	}
}
