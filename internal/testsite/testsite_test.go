package testsite

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

func client(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestLoginAccountInvalidate(t *testing.T) {
	s := New(t)
	c := client(t)

	resp, body := get(t, c, s.At("/account"))
	if resp.Request.URL.Path != "/login" || !strings.Contains(body, `form id="login"`) {
		t.Fatalf("logged-out /account ended on %s without the login form", resp.Request.URL)
	}

	resp, err := c.PostForm(s.At("/login"), url.Values{"username": {"alice"}, "password": {"wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || s.Sessions() != 0 {
		t.Fatalf("wrong password: status %d, %d sessions", resp.StatusCode, s.Sessions())
	}

	// The login response's cookies: sid persistent, sess session-only.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.PostForm(s.At("/login"), url.Values{"username": {"alice"}, "password": {"secret"}, "next": {"/account"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := map[string]*http.Cookie{}
	for _, ck := range resp.Cookies() {
		got[ck.Name] = ck
	}
	if ck := got[PersistentCookie]; ck == nil || ck.MaxAge != 86400 {
		t.Errorf("sid cookie %+v, want Max-Age 86400", ck)
	}
	if ck := got[SessionCookie]; ck == nil || ck.MaxAge != 0 || !ck.Expires.IsZero() {
		t.Errorf("sess cookie %+v, want no expiry", ck)
	}
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/account" {
		t.Errorf("login answered %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}

	resp, err = c.PostForm(s.At("/login"), url.Values{"username": {"alice"}, "password": {"secret"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `<p id="whoami">Logged in as alice</p>`) || !strings.Contains(string(b), `<span id="sess">present</span>`) {
		t.Fatalf("after login: %s", b)
	}
	if s.Sessions() != 2 || s.Logins() != 2 {
		t.Errorf("sessions %d logins %d, want 2 2", s.Sessions(), s.Logins())
	}
	if names := SortedCookieNames(s.LastCookies()); strings.Join(names, ",") != "sess,sid" {
		t.Errorf("last cookies %v", names)
	}

	_, body = get(t, c, s.At("/invalidate?user=alice"))
	if !strings.Contains(body, `<p id="invalidated">2</p>`) || s.Sessions() != 0 {
		t.Fatalf("invalidate: %s, %d sessions left", body, s.Sessions())
	}
	resp, _ = get(t, c, s.At("/account"))
	if resp.Request.URL.Path != "/login" {
		t.Errorf("invalidated session still reaches /account")
	}
}

func TestPages(t *testing.T) {
	s := New(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		path     string
		status   int
		contains string
		location string
	}{
		{"/", 200, `id="title"`, ""},
		{"/storage?set=v1", 200, `const set = "v1";`, ""},
		{"/storage?set=%3C/script%3E", 200, `const set = "\u003c/script\u003e";`, ""},
		{"/storage", 200, `const set = null;`, ""},
		{"/setcookie?name=a&value=b&max_age=60", 200, `<p id="set">a</p>`, ""},
		{"/setcookie", 400, "name is required", ""},
		{"/redirect?to=" + url.QueryEscape(s.On(BlockedHost, "/landing")), 302, "", s.On(BlockedHost, "/landing")},
		{"/links", 200, `href="` + s.On(BlockedHost, "/landing") + `"`, ""},
		{"/captcha", 200, `src="/recaptcha/api2/anchor?`, ""},
		{"/hcaptcha", 200, `hcaptcha`, ""},
		{"/slow?ms=1", 200, `id="slow"`, ""},
		{"/slow?ms=x", 400, "", ""},
		{"/widgets", 200, `id="color"`, ""},
		{"/login?next=//evil.example/", 200, `value="/account"`, ""},
		{"/nope", 404, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := get(t, noFollow, s.At(tc.path))
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if !strings.Contains(body, tc.contains) {
				t.Errorf("body lacks %q:\n%s", tc.contains, body)
			}
			if tc.location != "" && resp.Header.Get("Location") != tc.location {
				t.Errorf("location %q, want %q", resp.Header.Get("Location"), tc.location)
			}
		})
	}
	if s.Hits("/slow") != 2 {
		t.Errorf("hits /slow = %d, want 2", s.Hits("/slow"))
	}
}

func TestOtherHostSameListener(t *testing.T) {
	s := New(t)
	req, _ := http.NewRequest("GET", s.At("/landing"), nil)
	req.Host = BlockedHost + ":1"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `<p id="host">`+BlockedHost+`:1</p>`) {
		t.Errorf("landing: %s", b)
	}
	if u := s.On("localhost", "/x"); !strings.HasPrefix(u, "http://localhost:") || !strings.HasSuffix(u, "/x") {
		t.Errorf("On: %s", u)
	}
}
