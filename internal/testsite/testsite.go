package testsite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cookie names the site sets on login.
const (
	// PersistentCookie carries the server session id; Max-Age one day.
	PersistentCookie = "sid"
	// SessionCookie has no expiry: Chrome drops it at exit unless it
	// restores the last session.
	SessionCookie = "sess"
	// BlockedHost is the second domain, mapped to 127.0.0.1 by ChromeFlags.
	BlockedHost = "blocked.test"
)

// Options configure a Site. The zero value is usable.
type Options struct {
	// Addr to listen on; default "127.0.0.1:0" (a free port).
	Addr string
	// Users maps user names to passwords; default {"alice": "secret"}.
	Users map[string]string
	// SlowDelay is how long /slow waits by default; default 2s.
	SlowDelay time.Duration
	// Log receives one line per request at debug level; nil discards.
	Log *slog.Logger
}

// Site is a running test site.
type Site struct {
	// URL is the base URL, "http://127.0.0.1:PORT" (no trailing slash).
	URL string
	// Port is the TCP port the site listens on.
	Port int

	opts Options
	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	mu          sync.Mutex
	sessions    map[string]string // session id -> user
	logins      int
	hits        map[string]int
	lastCookies map[string]string
}

// Start serves a new site until Close.
func Start(opts Options) (*Site, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Users == nil {
		opts.Users = map[string]string{"alice": "secret"}
	}
	if opts.SlowDelay == 0 {
		opts.SlowDelay = 2 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("test site: listen on %s: %w", opts.Addr, err)
	}
	s := &Site{
		opts:        opts,
		ln:          ln,
		Port:        ln.Addr().(*net.TCPAddr).Port,
		done:        make(chan struct{}),
		sessions:    map[string]string{},
		hits:        map[string]int{},
		lastCookies: map[string]string{},
	}
	s.URL = "http://" + ln.Addr().String()
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// New starts a site for a test and closes it when the test ends.
func New(t testing.TB) *Site {
	t.Helper()
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, dropping open connections.
func (s *Site) Close() {
	_ = s.srv.Close()
	<-s.done
}

// Shutdown stops the server gracefully, waiting for requests in flight.
func (s *Site) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}

// Addr is "127.0.0.1:PORT".
func (s *Site) Addr() string { return s.ln.Addr().String() }

// At returns the URL of path (which should start with "/") on this site.
func (s *Site) At(path string) string { return s.URL + path }

// On returns the URL of path on this site's port but under another host name,
// such as "localhost" or BlockedHost.
func (s *Site) On(host, path string) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(s.Port)) + path
}

// ChromeFlags are the extra Chrome flags the site needs: BlockedHost resolves
// to 127.0.0.1 (the port stays). Pass them as launcher.Options.ExtraFlags.
func (s *Site) ChromeFlags() []string {
	return []string{
		"--host-resolver-rules=MAP " + BlockedHost + " 127.0.0.1",
	}
}

// Sessions returns the number of live server-side sessions.
func (s *Site) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Logins returns how many successful logins the site has seen.
func (s *Site) Logins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins
}

// Hits returns how many requests reached path (any host).
func (s *Site) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// LastCookies returns the cookies of the most recent request that carried
// any (a copy).
func (s *Site) LastCookies() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.lastCookies))
	for k, v := range s.lastCookies {
		out[k] = v
	}
	return out
}

// Invalidate kills the server-side sessions of user (all sessions when user
// is empty) and returns how many it killed.
func (s *Site) Invalidate(user string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, u := range s.sessions {
		if user == "" || u == user {
			delete(s.sessions, id)
			n++
		}
	}
	return n
}

// Login creates a server-side session for user without a browser and
// returns its id (the value of the sid cookie).
func (s *Site) Login(user string) string {
	id := newID()
	s.mu.Lock()
	s.sessions[id] = user
	s.logins++
	s.mu.Unlock()
	return id
}

// userOf returns the user of the request's session, "" when none is valid.
func (s *Site) userOf(r *http.Request) string {
	c, err := r.Cookie(PersistentCookie)
	if err != nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[c.Value]
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Site) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", s.home)
	mux.HandleFunc("GET /login", s.loginForm)
	mux.HandleFunc("POST /login", s.loginPost)
	mux.HandleFunc("/account", s.account)
	mux.HandleFunc("/logout", s.logout)
	mux.HandleFunc("/storage", s.storage)
	mux.HandleFunc("/cookies", s.cookies)
	mux.HandleFunc("/setcookie", s.setCookie)
	mux.HandleFunc("/redirect", s.redirect)
	mux.HandleFunc("/links", s.links)
	mux.HandleFunc("/landing", s.landing)
	mux.HandleFunc("/captcha", s.captcha)
	mux.HandleFunc("/recaptcha/api2/anchor", s.captchaFrame)
	mux.HandleFunc("/hcaptcha", s.hcaptcha)
	mux.HandleFunc("/hcaptcha-frame", s.captchaFrame)
	mux.HandleFunc("/slow", s.slow)
	mux.HandleFunc("/invalidate", s.invalidate)
	mux.HandleFunc("/widgets", s.widgets)
	s.popupRoutes(mux)
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		if cs := r.Cookies(); len(cs) > 0 {
			s.lastCookies = map[string]string{}
			for _, c := range cs {
				s.lastCookies[c.Name] = c.Value
			}
		}
		s.mu.Unlock()
		s.opts.Log.Debug("test site request", "method", r.Method, "host", r.Host, "path", r.URL.Path)
		w.Header().Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}

func page(w http.ResponseWriter, status int, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head>\n<body>\n%s\n</body></html>\n",
		html.EscapeString(title), body)
}

func (s *Site) home(w http.ResponseWriter, r *http.Request) {
	user := s.userOf(r)
	status := "Not logged in"
	if user != "" {
		status = "Logged in as " + html.EscapeString(user)
	}
	page(w, 200, "Director test site", `<h1 id="title">Director test site</h1>
<p id="status">`+status+`</p>
<ul>
<li><a id="login-link" href="/login">Log in</a></li>
<li><a id="account-link" href="/account">Account</a></li>
<li><a href="/storage">Storage</a></li>
<li><a href="/links">Links</a></li>
<li><a href="/captcha">CAPTCHA</a></li>
<li><a href="/widgets">Widgets</a></li>
</ul>`)
}

const loginFormHTML = `<h1>Log in</h1>
%s<form id="login" method="post" action="/login">
<input type="hidden" name="next" value="%s">
<label>User <input id="username" name="username" autocomplete="username"></label>
<label>Password <input id="password" name="password" type="password" autocomplete="current-password"></label>
<button id="submit" type="submit">Log in</button>
</form>`

func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/account"
	}
	return next
}

func (s *Site) loginForm(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	page(w, 200, "Log in", fmt.Sprintf(loginFormHTML, "", html.EscapeString(next)))
}

func (s *Site) loginPost(w http.ResponseWriter, r *http.Request) {
	user, pass := r.PostFormValue("username"), r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	want, ok := s.opts.Users[user]
	if !ok || want != pass {
		page(w, http.StatusUnauthorized, "Log in",
			fmt.Sprintf(loginFormHTML, `<p id="error">Wrong user name or password</p>`+"\n", html.EscapeString(next)))
		return
	}
	id := s.Login(user)
	http.SetCookie(w, &http.Cookie{Name: PersistentCookie, Value: id, Path: "/", MaxAge: 86400, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "s-" + id[:8], Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Site) account(w http.ResponseWriter, r *http.Request) {
	user := s.userOf(r)
	if user == "" {
		http.Redirect(w, r, "/login?next=/account", http.StatusFound)
		return
	}
	sess := "(none)"
	if _, err := r.Cookie(SessionCookie); err == nil {
		sess = "present"
	}
	page(w, 200, "Account", `<h1>Account</h1>
<p id="whoami">Logged in as `+html.EscapeString(user)+`</p>
<p>Session cookie: <span id="sess">`+sess+`</span></p>
<p><a id="logout" href="/logout">Log out</a></p>`)
}

func (s *Site) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(PersistentCookie); err == nil {
		s.mu.Lock()
		delete(s.sessions, c.Value)
		s.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: PersistentCookie, Value: "", Path: "/", MaxAge: -1})
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusFound)
}

const storageJS = `<script>
(async () => {
  const set = %s;
  const openDB = () => new Promise((res, rej) => {
    const req = indexedDB.open("director", 1);
    req.onupgradeneeded = () => req.result.createObjectStore("kv");
    req.onsuccess = () => res(req.result);
    req.onerror = () => rej(req.error);
  });
  const tx = (db, mode, f) => new Promise((res, rej) => {
    const t = db.transaction("kv", mode);
    const r = f(t.objectStore("kv"));
    t.oncomplete = () => res(r && r.result);
    t.onerror = () => rej(t.error);
  });
  try {
    if (set !== null) localStorage.setItem("director", set);
    const db = await openDB();
    if (set !== null) await tx(db, "readwrite", s => s.put(set, "k"));
    const got = await tx(db, "readonly", s => s.get("k"));
    db.close();
    document.getElementById("ls").textContent = localStorage.getItem("director") ?? "(none)";
    document.getElementById("idb").textContent = got ?? "(none)";
  } catch (e) {
    document.getElementById("err").textContent = String(e);
  }
  const done = document.createElement("p");
  done.id = "ready";
  done.textContent = "ready";
  document.body.appendChild(done);
})();
</script>`

func (s *Site) storage(w http.ResponseWriter, r *http.Request) {
	set := "null"
	if v, ok := r.URL.Query()["set"]; ok {
		b, _ := json.Marshal(v[0])
		// Keep "</script>" in a value from ending the script.
		set = strings.ReplaceAll(string(b), "<", `\u003c`)
	}
	page(w, 200, "Storage", `<h1>Storage</h1>
<p>localStorage: <span id="ls"></span></p>
<p>IndexedDB: <span id="idb"></span></p>
<p id="err"></p>
`+fmt.Sprintf(storageJS, set))
}

func (s *Site) cookies(w http.ResponseWriter, r *http.Request) {
	m := map[string]string{}
	for _, c := range r.Cookies() {
		m[c.Name] = c.Value
	}
	b, _ := json.Marshal(m)
	page(w, 200, "Cookies", `<pre id="cookies">`+html.EscapeString(string(b))+`</pre>`)
}

func (s *Site) setCookie(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := q.Get("name")
	if name == "" {
		http.Error(w, "name is required", http.StatusBadRequest)
		return
	}
	c := &http.Cookie{Name: name, Value: q.Get("value"), Path: "/", SameSite: http.SameSiteLaxMode}
	if ma := q.Get("max_age"); ma != "" {
		n, err := strconv.Atoi(ma)
		if err != nil {
			http.Error(w, "max_age must be an integer", http.StatusBadRequest)
			return
		}
		c.MaxAge = n
	}
	http.SetCookie(w, c)
	page(w, 200, "Cookie set", `<p id="set">`+html.EscapeString(name)+`</p>`)
}

func (s *Site) redirect(w http.ResponseWriter, r *http.Request) {
	to := r.URL.Query().Get("to")
	if _, err := url.Parse(to); err != nil || to == "" {
		http.Error(w, "to must be a URL", http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, to, http.StatusFound)
}

func (s *Site) links(w http.ResponseWriter, r *http.Request) {
	page(w, 200, "Links", `<h1>Links</h1>
<p><a id="blocked-link" href="`+html.EscapeString(s.On(BlockedHost, "/landing"))+`">to `+BlockedHost+`</a></p>
<p><a id="localhost-link" href="`+html.EscapeString(s.On("localhost", "/landing"))+`">to localhost</a></p>
<p><a id="redirect-link" href="/redirect?to=`+url.QueryEscape(s.On(BlockedHost, "/landing"))+`">redirect to `+BlockedHost+`</a></p>
<p><a id="newtab-link" href="/landing" target="_blank">new tab</a></p>
<p><a id="same-link" href="/landing">same site</a></p>`)
}

func (s *Site) landing(w http.ResponseWriter, r *http.Request) {
	page(w, 200, "Landing", `<h1>Landing</h1><p id="host">`+html.EscapeString(r.Host)+`</p>`)
}

func (s *Site) captcha(w http.ResponseWriter, r *http.Request) {
	page(w, 200, "Verify you are human", `<h1>Verify you are human</h1>
<div class="g-recaptcha" data-sitekey="test-site-key">
<iframe title="reCAPTCHA" width="304" height="78" src="/recaptcha/api2/anchor?ar=1&k=test-site-key&co=x&hl=en&v=1&size=normal"></iframe>
</div>`)
}

func (s *Site) hcaptcha(w http.ResponseWriter, r *http.Request) {
	page(w, 200, "Verify you are human", `<h1>Verify you are human</h1>
<div class="h-captcha" data-sitekey="test-site-key">
<iframe title="hCaptcha" width="304" height="78" src="/hcaptcha-frame?host=hcaptcha.com#frame=checkbox"></iframe>
</div>`)
}

func (s *Site) captchaFrame(w http.ResponseWriter, r *http.Request) {
	page(w, 200, "captcha", `<label><input type="checkbox" id="recaptcha-anchor"> I'm not a robot</label>`)
}

func (s *Site) slow(w http.ResponseWriter, r *http.Request) {
	d := s.opts.SlowDelay
	if ms := r.URL.Query().Get("ms"); ms != "" {
		n, err := strconv.Atoi(ms)
		if err != nil || n < 0 {
			http.Error(w, "ms must be a non-negative integer", http.StatusBadRequest)
			return
		}
		d = time.Duration(n) * time.Millisecond
	}
	select {
	case <-time.After(d):
	case <-r.Context().Done():
		return
	}
	page(w, 200, "Slow", `<p id="slow">done after `+d.String()+`</p>`)
}

func (s *Site) invalidate(w http.ResponseWriter, r *http.Request) {
	n := s.Invalidate(r.URL.Query().Get("user"))
	page(w, 200, "Invalidated", `<p id="invalidated">`+strconv.Itoa(n)+`</p>`)
}

func (s *Site) widgets(w http.ResponseWriter, r *http.Request) {
	page(w, 200, "Widgets", `<h1>Widgets</h1>
<input id="name" name="name">
<select id="color"><option value="red">Red</option><option value="green">Green</option><option value="blue">Blue</option></select>
<button id="go" type="button" onclick="document.getElementById('out').textContent='Hello '+document.getElementById('name').value+' ('+document.getElementById('color').value+')'">Go</button>
<p id="out"></p>
<p id="later" style="display:none">later</p>
<p id="keys"></p>
<ul id="items"><li>one</li><li>two</li><li>three</li></ul>
<a id="ext" href="https://example.com/" data-kind="external">example</a>
<script>
setTimeout(() => { document.getElementById("later").style.display = "block"; }, 300);
document.getElementById("name").addEventListener("keydown", e => {
  if (e.key === "Enter") document.getElementById("keys").textContent = "enter:" + e.target.value;
});
</script>`)
}

// SortedCookieNames is a helper for tests: the names of m, sorted.
func SortedCookieNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
