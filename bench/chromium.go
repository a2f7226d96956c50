package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"director/launcher"
)

// chromiumPage is what Chromium loads to fill its profile the way a day of
// use of a web app does: cookies, localStorage, an IndexedDB database with
// text records and binary blobs (the larger ones land in the .blob
// directory as files), and cacheable scripts and images (HTTP cache and V8
// code cache). It reports to /done when everything is written.
const chromiumPage = `<!doctype html><title>bench</title>
<script>
const words = "session account inbox message thread label draft invoice order customer settings profile token refresh".split(" ");
function text(n, seed) {
  let s = "", x = seed;
  while (s.length < n) { x = (x * 1103515245 + 12345) >>> 0; s += words[x % words.length] + " " + (x >>> 8) + ", "; }
  return s.slice(0, n);
}
function random(n) {
  const a = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(a.subarray(i, Math.min(n, i + 65536)));
  return a;
}
function tx(db, f) {
  return new Promise((res, rej) => { const t = db.transaction("s", "readwrite"); f(t.objectStore("s")); t.oncomplete = res; t.onerror = () => rej(t.error); });
}
async function main() {
  document.cookie = "sid=" + Math.random().toString(36).slice(2) + "; max-age=2592000; path=/";
  for (let i = 0; i < 200; i++) localStorage.setItem("item" + i, JSON.stringify({i, body: text(8000, i)}));
  const db = await new Promise((res, rej) => {
    const r = indexedDB.open("bench", 1);
    r.onupgradeneeded = () => r.result.createObjectStore("s");
    r.onsuccess = () => res(r.result);
    r.onerror = () => rej(r.error);
  });
  for (let b = 0; b < 40; b++) {
    await tx(db, st => {
      for (let i = 0; i < 25; i++) {
        const k = b * 25 + i;
        if (k % 25 == 0) st.put(new Blob([random(200000)]), k); // a file in the .blob directory
        else if (k % 4 == 1) st.put(random(12000), k); // encrypted or compressed payloads
        else st.put({id: k, subject: text(80, k), body: text(12000, k + 7)}, k);
      }
    });
  }
  const loads = [];
  for (let i = 0; i < 120; i++) {
    loads.push(new Promise((res, rej) => { const s = document.createElement("script"); s.src = "/res/" + i + ".js"; s.onload = res; s.onerror = rej; document.head.appendChild(s); }));
    loads.push(fetch("/res/" + i + ".png").then(r => r.arrayBuffer()));
  }
  await Promise.all(loads);
}
main().then(() => fetch("/done"), e => fetch("/done?err=" + encodeURIComponent(e)));
</script>`

// makeChromiumProfile runs headless Chromium on a fresh user-data-dir
// against a site served here on 127.0.0.1 (chromiumPage), waits until the
// page has written everything, and stops Chromium with SIGTERM, which it
// handles as a clean shutdown (it flushes its databases).
func makeChromiumProfile(bin, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	done := make(chan string, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, chromiumPage)
	})
	mux.HandleFunc("/res/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSuffix(name, ".js"), ".png"))
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		w.Header().Set("Cache-Control", "public, max-age=86400")
		if strings.HasSuffix(name, ".png") { // already compressed, like real images
			w.Header().Set("Content-Type", "image/png")
			b := make([]byte, 20<<10+rng.IntN(60<<10))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			w.Write(b)
			return
		}
		w.Header().Set("Content-Type", "text/javascript")
		var sb strings.Builder
		for i := 0; sb.Len() < 30<<10+rng.IntN(60<<10); i++ {
			fmt.Fprintf(&sb, "function f%d_%d(a, b) { const key = %q + a; return b ? cache.get(key) ?? compute(key, %d) : null; }\n",
				n, i, fmt.Sprint(rng.Uint32()), rng.IntN(1000))
		}
		fmt.Fprintf(&sb, "var cache = cache || new Map(); function compute(k, n) { return k.length * n; } f%d_0('x', true);\n", n)
		w.Write([]byte(sb.String()))
	})
	mux.HandleFunc("/done", func(w http.ResponseWriter, r *http.Request) {
		select {
		case done <- r.URL.Query().Get("err"):
		default:
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	cmd := exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--password-store=basic", "--use-mock-keychain", "--user-data-dir="+dir, "http://"+ln.Addr().String()+"/")
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var pageErr error
	select {
	case e := <-done:
		if e != "" {
			pageErr = fmt.Errorf("the page failed: %s", e)
		}
		time.Sleep(2 * time.Second) // let the last writes reach the databases' logs
	case <-time.After(90 * time.Second):
		pageErr = fmt.Errorf("the page did not finish within 90 s")
	case err := <-exited:
		return fmt.Errorf("chromium exited early: %v", err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
	if pageErr != nil {
		return pageErr
	}
	// Chrome stopped by a signal leaves its runtime files behind, and its
	// socket directory in /tmp; they are not part of the comparison.
	if _, err := launcher.CleanRuntimeFiles(dir); err != nil {
		return err
	}
	if n, _ := countFiles(dir); n == 0 {
		return fmt.Errorf("chromium wrote no files")
	}
	return nil
}
