// Command popupws measures how often Chromium fails, on its own, the
// WebSocket that a popup opens as it loads (docs/design-notes.md, "A
// popup's WebSocket that Chromium fails"). No DevTools client is attached:
// each run starts a fresh headless Chromium on a page that opens a popup,
// and the popup's page opens a WebSocket to blocked.test (mapped to
// 127.0.0.1). A run fails when the popup's page was served but its
// WebSocket never reached the server and the page saw it fail.
//
//	go run ./session/testdata/popupws -runs 100            # popup keeps its opener
//	go run ./session/testdata/popupws -runs 100 -noopener  # popup without opener
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"time"
)

func main() {
	runs := flag.Int("runs", 100, "Chromium runs")
	noopener := flag.Bool("noopener", false, "open the popup with noopener")
	chrome := flag.String("chrome", "chromium", "Chromium binary")
	flag.Parse()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	features := ""
	if *noopener {
		features = "noopener"
	}
	var mu sync.Mutex
	hits := map[string]int{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Cache-Control", "no-store")
		switch r.URL.Path {
		case "/opener":
			fmt.Fprintf(w, `<!doctype html><script>window.open("/popup", "_blank", %q)</script>`, features)
		case "/popup":
			fmt.Fprintf(w, `<!doctype html><script>const c = new WebSocket("ws://blocked.test:%d/ws"); c.onerror = () => fetch("/failed");</script>`, port)
		default:
			http.NotFound(w, r) // also /ws: the handshake reached the server
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	failed := 0
	for i := 0; i < *runs; i++ {
		mu.Lock()
		clear(hits)
		mu.Unlock()
		dir, err := os.MkdirTemp("", "popupws-")
		if err != nil {
			log.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, *chrome, "--headless", "--no-first-run", "--no-sandbox", "--disable-gpu", "--disable-popup-blocking",
			"--host-resolver-rules=MAP blocked.test 127.0.0.1", "--user-data-dir="+dir, "--remote-debugging-port=0",
			fmt.Sprintf("http://127.0.0.1:%d/opener", port))
		if err := cmd.Start(); err != nil {
			log.Fatal(err)
		}
		var reached, sawFail, served int
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			reached, sawFail, served = hits["/ws"], hits["/failed"], hits["/popup"]
			mu.Unlock()
			if reached > 0 || sawFail > 0 {
				break
			}
		}
		switch {
		case served == 0:
			log.Printf("run %d: the popup never loaded", i+1)
		case reached == 0 && sawFail > 0:
			failed++
			log.Printf("run %d: the popup's WebSocket failed without reaching the server", i+1)
		case reached == 0:
			log.Printf("run %d: no WebSocket and no failure within 10 s", i+1)
		}
		cancel()
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	}
	fmt.Printf("noopener=%v: the WebSocket failed before reaching the server in %d of %d runs\n", *noopener, failed, *runs)
}
