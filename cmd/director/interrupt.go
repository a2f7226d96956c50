package main

import (
	"context"
	"io"
	"os"
	"sync"

	"director/errcode"
)

// interrupts counts Ctrl-C and SIGTERM. The first stops the command
// gracefully (its context is cancelled, and it removes what it had half
// done); one more quits at once, for a clean-up that hangs on a store that
// stopped answering. A command may take a later signal for a stage of its
// own (profile open snapshots after the Ctrl-C that closed Chrome, and a
// second Ctrl-C stops that snapshot gracefully): allowAnotherInterrupt.
type interrupts struct {
	mu       sync.Mutex
	count    int // signals received
	graceful int // how many of them stop gracefully
	// hints names director in the hint of a quit at once, as the command's
	// own hints do (setQuitHints).
	hints invocation
}

type interruptsKey struct{}

// next counts a signal and says whether it stops gracefully.
func (in *interrupts) next() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.count++
	return in.count <= in.graceful
}

// setQuitHints makes the hint printed when a signal quits at once name
// director as inv does. Without the main program's interrupts in ctx it
// does nothing.
func setQuitHints(ctx context.Context, inv invocation) {
	if in, ok := ctx.Value(interruptsKey{}).(*interrupts); ok {
		in.mu.Lock()
		in.hints = inv
		in.mu.Unlock()
	}
}

// quitHints is the invocation setQuitHints recorded.
func (in *interrupts) quitHints() invocation {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.hints
}

// allowAnotherInterrupt lets the next Ctrl-C or SIGTERM stop a stage of the
// command gracefully instead of quitting at once. Without the main
// program's interrupts in ctx (tests calling run) it does nothing.
func allowAnotherInterrupt(ctx context.Context) {
	if in, ok := ctx.Value(interruptsKey{}).(*interrupts); ok {
		in.mu.Lock()
		in.graceful = in.count + 1
		in.mu.Unlock()
	}
}

// errQuitAtOnce is reported when a second Ctrl-C or SIGTERM quits director
// before the command has cleaned up.
var errQuitAtOnce = errcode.New(errcode.Interrupted, "interrupted again: quit without waiting for the command to clean up").
	WithHint("what a command stopped midway leaves is removed later: a partial restore or upload by the next command on that profile, " +
		"archives without a manifest and S3 uploads by `director profile prune <profile> --keep-last <n>` once they are an hour old")

// outputs serialises the command's writes to stdout and stderr with the
// process's exit, so that a quit at once never prints beside (or after) the
// command's own result.
type outputs struct{ mu sync.Mutex }

func (o *outputs) writer(f *os.File) io.Writer { return &lockedWriter{o: o, f: f} }

// exit ends the process with code once no write is under way; no later
// write or quit prints anything.
func (o *outputs) exit(code int) {
	o.mu.Lock()
	os.Exit(code)
}

// quit prints with report and ends the process with code, unless the
// command is already exiting.
func (o *outputs) quit(report func(), code int) {
	o.mu.Lock()
	report()
	os.Exit(code)
}

type lockedWriter struct {
	o *outputs
	f *os.File
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	return w.f.Write(p)
}

// File is the file written to, for a caller that asks whether it is a
// terminal.
func (w *lockedWriter) File() *os.File { return w.f }

// fileOf is w's *os.File, or that of the file a lockedWriter writes to.
func fileOf(w io.Writer) (*os.File, bool) {
	switch f := w.(type) {
	case *os.File:
		return f, true
	case interface{ File() *os.File }:
		return f.File(), true
	}
	return nil, false
}
