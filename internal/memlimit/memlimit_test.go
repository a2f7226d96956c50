package memlimit

import (
	"runtime/debug"
	"testing"
)

func TestApply(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })

	t.Setenv("GOMEMLIMIT", "")
	if got := Apply(); got != Default || debug.SetMemoryLimit(-1) != Default {
		t.Fatalf("Apply() = %d, runtime limit %d; want %d", got, debug.SetMemoryLimit(-1), Default)
	}
	// A user's GOMEMLIMIT wins: Apply leaves the runtime's limit alone.
	debug.SetMemoryLimit(1 << 30)
	t.Setenv("GOMEMLIMIT", "1GiB")
	if got := Apply(); got != 1<<30 {
		t.Fatalf("with GOMEMLIMIT set, Apply() = %d, want the existing 1 GiB", got)
	}
}
