// Command director keeps browsers logged in: it snapshots Chrome profiles to
// compressed archives, stores them, restores them safely, and runs workflows
// on them. This package only parses flags, calls the packages that do the
// work, and renders text or --json; see doc.go of each package for the rest.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"director/errcode"
	"director/internal/memlimit"
)

func main() {
	memlimit.Apply()
	ctx, cancel := context.WithCancel(context.Background())
	stops := &interrupts{graceful: 1}
	ctx = context.WithValue(ctx, interruptsKey{}, stops)
	out := &outputs{}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for range sigs {
			if stops.next() {
				cancel()
				continue
			}
			out.quit(func() {
				reportError(os.Stdout, os.Stderr, jsonRequested(os.Args), errQuitAtOnce)
			}, errcode.ExitStatus(errQuitAtOnce))
		}
	}()
	code := run(ctx, os.Args, out.writer(os.Stdout), out.writer(os.Stderr))
	out.exit(code)
}
