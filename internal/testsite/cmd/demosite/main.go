// Command demosite serves the test site (package testsite) for `make demo`
// and for trying director by hand: it prints the site's URL on stdout (and
// to -url-file when given), then serves until interrupted.
//
//	go run ./internal/testsite/cmd/demosite -addr 127.0.0.1:0
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"director/internal/testsite"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (port 0 picks a free one)")
	urlFile := flag.String("url-file", "", "also write the site's URL to this file (for scripts)")
	verbose := flag.Bool("v", false, "log every request on stderr")
	flag.Parse()

	lvl := slog.LevelInfo
	if *verbose {
		lvl = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	site, err := testsite.Start(testsite.Options{Addr: *addr, Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "demosite:", err)
		os.Exit(1)
	}
	fmt.Println(site.URL)
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile, []byte(site.URL+"\n"), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "demosite:", err)
			site.Close()
			os.Exit(1)
		}
	}
	fmt.Fprintf(os.Stderr, "demosite: serving %s (log in as alice / secret); Ctrl-C to stop\n", site.URL)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = site.Shutdown(shut)
}
