package session

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"director/internal/testsite"
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

// blockedWS is the URL of a WebSocket to testsite.BlockedHost on this
// site, at /ws/path.
func (h *hitSite) blockedWS(path string) string {
	return "ws://" + net.JoinHostPort(testsite.BlockedHost, strconv.Itoa(h.port)) + "/ws/" + path
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
	case "/ws-worker":
		// A worker (?kind=dedicated, nested: a worker's worker, shared,
		// service)
		// opens a WebSocket to BlockedHost as it starts; #status shows
		// what became of it.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Worker WebSocket</title><p id="status">loading</p><script>
const kind = %q, src = "/ws-worker.js?path=" + kind;
const done = m => { document.getElementById("status").textContent = m; };
if (kind === "shared") {
  const sw = new SharedWorker(src); sw.port.onmessage = e => done(e.data); sw.port.start();
} else if (kind === "service") {
  navigator.serviceWorker.onmessage = e => done(e.data);
  navigator.serviceWorker.register(src).then(() => navigator.serviceWorker.ready).then(reg => reg.active.postMessage("?"), e => done("no service worker: " + e));
} else {
  const wk = new Worker(kind === "nested" ? "/ws-nested.js" : src); wk.onmessage = e => done(e.data);
}
</script>`, r.URL.Query().Get("kind"))
	case "/ws-worker.js":
		// The worker: the WebSocket opens before anything else runs.
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprintf(w, `let result = "", ports = [];
const report = m => { result = m; if (ports.length) ports.forEach(p => p.postMessage(m)); else if (self.postMessage) postMessage(m); };
try { const c = new WebSocket(%q); c.onopen = () => report("open"); c.onerror = () => report("error"); } catch (e) { report("threw"); }
self.onconnect = e => { const p = e.ports[0]; ports.push(p); if (result) p.postMessage(result); };
self.onmessage = e => { if (e.source) { ports.push(e.source); if (result) e.source.postMessage(result); } };
`, h.blockedWS(r.URL.Query().Get("path")))
	case "/ws-nested.js":
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `const inner = new Worker("/ws-worker.js?path=nested"); inner.onmessage = e => postMessage(e.data);`)
	case "/ws-frame":
		// A cross-site frame (localhost in a page on 127.0.0.1, so its own
		// process and target) opens a WebSocket to BlockedHost itself
		// (?in=page) or from a worker of its own (?in=worker).
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Frame WebSocket</title><p id="status">loading</p>
<script>addEventListener("message", e => { document.getElementById("status").textContent = e.data; });</script>
<iframe src=%q></iframe>`, h.on("localhost", "/ws-frame-inner?in="+url.QueryEscape(r.URL.Query().Get("in"))))
	case "/ws-frame-inner":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Query().Get("in") == "worker" {
			fmt.Fprint(w, `<!doctype html><p>inner</p><script>
const wk = new Worker("/ws-worker.js?path=frame-worker"); wk.onmessage = e => parent.postMessage(e.data, "*");
</script>`)
			return
		}
		fmt.Fprintf(w, `<!doctype html><p>inner</p><script>
const report = m => parent.postMessage(m, "*");
try { const c = new WebSocket(%q); c.onopen = () => report("open"); c.onerror = () => report("error"); } catch (e) { report("threw"); }
</script>`, h.blockedWS("frame"))
	case "/ws-popup":
		// #open opens a popup (#link: a target=_blank link, so without
		// opener) whose page opens a WebSocket to BlockedHost as it loads;
		// #open-worker one (without opener) whose page starts a worker
		// that does. Without noopener, Chromium 156 sometimes never runs
		// that worker, even with no DevTools session anywhere near it
		// (docs/design-notes.md, "The domain policy at name resolution"),
		// and it sometimes fails #open's WebSocket before any request
		// (docs/design-notes.md, "A popup's WebSocket that Chromium fails").
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Popup WebSocket</title><button id="open" onclick="window.open('/ws-page?path=popup')">open</button>
<a id="link" href="/ws-page?path=popup-link" target="_blank">link</a>
<button id="open-worker" onclick="window.open('/ws-worker?kind=dedicated', '_blank', 'noopener')">worker</button>`)
	case "/ws-page":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>WebSocket page</title><p id="status">loading</p><script>
const done = m => { document.getElementById("status").textContent = m; };
try { const c = new WebSocket(%q); c.onopen = () => done("open"); c.onerror = () => done("error"); } catch (e) { done("threw"); }
</script>`, h.blockedWS(r.URL.Query().Get("path")))
	case "/script.js":
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, "window.loaded = true;")
	default:
		http.NotFound(w, r)
	}
}
