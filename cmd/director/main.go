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

	"director/internal/memlimit"
)

func main() {
	memlimit.Apply()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
