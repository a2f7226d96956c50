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

// stopSignals are the signals that end a command in order, as Ctrl-C does:
// its context is cancelled, so a snapshot or restore keeps nothing
// half-done and `profile open` closes Chrome gracefully (so that it writes
// its cookies) and still takes its --snapshot. SIGHUP is among them because
// closing the terminal sends it, and its default action would end director
// at once: Chrome then died with the cookies of the last half minute
// unwritten and nothing was snapshotted.
//
// A signal that director was started with ignored (SIGHUP under nohup,
// SIGINT for a script's background job) stays ignored: listening for it
// would undo the ignoring, and nohup's command would stop when its terminal
// closed.
func stopSignals() []os.Signal {
	var sigs []os.Signal
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	return sigs
}

func main() {
	privateFiles()
	memlimit.Apply()
	ctx, cancel := context.WithCancel(context.Background())
	stops := &interrupts{graceful: 1}
	ctx = context.WithValue(ctx, interruptsKey{}, stops)
	out := &outputs{}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignals()...)
	go func() {
		for range sigs {
			if stops.next() {
				cancel()
				continue
			}
			out.quit(func() {
				reportError(os.Stdout, os.Stderr, jsonRequested(os.Args), stops.quitHints(), errQuitAtOnce)
			}, errcode.ExitStatus(errQuitAtOnce))
		}
	}()
	code := run(ctx, os.Args, out.writer(os.Stdout), out.writer(os.Stderr))
	out.exit(code)
}
