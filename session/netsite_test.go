package session

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
)

// hitSite is a local web server for the domain policy and login check
// tests. It counts the requests it gets per host name: 127.0.0.1 and
// localhost reach its one listener, so a page on one can point at the other.
type hitSite struct {
	port int
	mu   sync.Mutex
	hits map[string]map[string]int // host -> path -> requests
}

func newHitSite(t *testing.T) *hitSite {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hitSite{port: ln.Addr().(*net.TCPAddr).Port, hits: map[string]map[string]int{}}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return h
}

// on is the URL of path under host (127.0.0.1 or localhost).
func (h *hitSite) on(host, path string) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(h.port)) + path
}

// hitsOn returns the requests host got, per path (a copy).
func (h *hitSite) hitsOn(host string) map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for p, n := range h.hits[host] {
		out[p] = n
	}
	return out
}

func (h *hitSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.Host)
	h.mu.Lock()
	if h.hits[host] == nil {
		h.hits[host] = map[string]int{}
	}
	h.hits[host][r.URL.Path]++
	h.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	switch r.URL.Path {
	case "/subresources":
		// Every kind of request a page makes, to localhost; #status says
		// "done" once each has loaded or failed.
		other, ws := h.on("localhost", ""), "ws://"+net.JoinHostPort("localhost", strconv.Itoa(h.port))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Subresources</title><p id="status">loading</p><script>
const other = %q, ws = %q;
navigator.sendBeacon(other + "/beacon", "x");
const tries = [
  new Promise(r => { const i = new Image(); i.onload = i.onerror = r; i.src = other + "/image.png"; }),
  new Promise(r => { const s = document.createElement("script"); s.onload = s.onerror = r; s.src = other + "/script.js"; document.head.append(s); }),
  fetch(other + "/fetch", {mode: "no-cors"}).then(() => {}, () => {}),
  new Promise(r => { try { const c = new WebSocket(ws + "/websocket"); c.onopen = c.onerror = c.onclose = r; } catch (e) { r(); } }),
  new Promise(r => { const wk = new Worker(URL.createObjectURL(new Blob(["fetch(" + JSON.stringify(other + "/worker-fetch") + ").then(() => postMessage(1), () => postMessage(0))"]))); wk.onmessage = r; }),
];
Promise.all(tries).then(() => { document.getElementById("status").textContent = "done"; });
</script>`, other, ws)
	case "/status":
		// ?code=N answers N with a page; &empty=1 with no body.
		code, err := strconv.Atoi(r.URL.Query().Get("code"))
		if err != nil || code < 200 || code > 599 {
			code = http.StatusBadRequest
		}
		if r.URL.Query().Get("empty") != "" {
			w.WriteHeader(code)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(code)
		fmt.Fprintf(w, `<!doctype html><title>%d</title><h1 id="status">%s</h1>`, code, http.StatusText(code))
	case "/script.js":
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, "window.loaded = true;")
	default:
		http.NotFound(w, r)
	}
}
