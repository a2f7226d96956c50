package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"director/internal/s3test"
	"director/internal/testenv"
)

// TestMain lets the test binary play the child, as the real binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == childCmd {
		os.Exit(childMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// needServer returns the versitygw binary; without one the test fails
// under CI and is skipped elsewhere.
func needServer(t *testing.T) string {
	t.Helper()
	bin := s3test.Binary()
	var err error
	if bin == "" {
		err = errors.New("go install github.com/versity/versitygw/cmd/versitygw@v1.8.0")
	}
	testenv.Require(t, "versitygw", err)
	return bin
}

// gone checks that the work folder was removed and the server stopped.
func gone(t *testing.T, work, endpoint string) {
	t.Helper()
	if work == "" || endpoint == "" {
		t.Fatal("run never reported its work folder and server")
	}
	if _, err := os.Stat(work); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("work folder %s left behind: %v", work, err)
	}
	if c, err := net.DialTimeout("tcp", endpoint, time.Second); err == nil {
		c.Close()
		t.Errorf("versitygw still listens on %s", endpoint)
	}
}

// TestSmallRun runs the whole benchmark at 8 MB, once, through the real
// main path (flags, children, table and JSON) so that it cannot rot.
func TestSmallRun(t *testing.T) {
	bin := needServer(t)
	var work, endpoint string
	cfg := config{SizeMB: 8, Reps: 1, Server: bin, started: func(w, e string) { work, endpoint = w, e }}
	rep, err := run(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	gone(t, work, endpoint)

	if len(rep.Cases) != 4 {
		t.Fatalf("%d cases, want 4", len(rep.Cases))
	}
	if rep.TreeBytes < 8<<20 || rep.TreeFiles < 100 {
		t.Errorf("tree of %d files, %d bytes; want a profile-like tree of 8 MB", rep.TreeFiles, rep.TreeBytes)
	}
	for _, c := range rep.Cases {
		if len(c.Runs) != 1 || c.MedianSec <= 0 || c.MBPerSec <= 0 {
			t.Errorf("%s: %d runs, median %v s, %v MB/s", c.Name, len(c.Runs), c.MedianSec, c.MBPerSec)
		}
		// The default excludes drop nothing of this tree.
		if c.RawBytes != rep.TreeBytes {
			t.Errorf("%s moved %d raw bytes of the tree's %d", c.Name, c.RawBytes, rep.TreeBytes)
		}
		// About half the tree is random: the archive cannot be much smaller.
		if c.ArchiveBytes < rep.TreeBytes/3 || c.ArchiveBytes > rep.TreeBytes {
			t.Errorf("%s: archive of %d bytes for a %d-byte tree", c.Name, c.ArchiveBytes, rep.TreeBytes)
		}
		if c.PeakRSSMB <= 0 {
			t.Errorf("%s: no peak RSS", c.Name)
		}
	}
	if rep.Ratios.PeakRSSMB <= 0 || rep.Ratios.TargetOverheadPct != 15 || rep.Ratios.TargetPeakRSSMB != 100 {
		t.Errorf("ratios: %+v", rep.Ratios)
	}

	var table bytes.Buffer
	printTable(&table, rep)
	for _, want := range []string{"snapshot+upload, no encryption", "snapshot+upload, age", "download+restore, no encryption",
		"download+restore, age", "encryption adds", "to snapshot time (target <= 15%)", "peak RSS", "(target < 100 MB)"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

// TestJSONFlag goes through the command line: -json prints one object.
func TestJSONFlag(t *testing.T) {
	needServer(t)
	var out, errOut bytes.Buffer
	if st := mainStatus([]string{"-size", "2", "-reps", "1", "-part-size", "5", "-json"}, &out, &errOut); st != 0 {
		t.Fatalf("exit %d: %s", st, errOut.String())
	}
	var rep Report
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out.String())
	}
	if dec.More() {
		t.Error("more than one JSON value on stdout")
	}
	if len(rep.Cases) != 4 || rep.Ratios.PeakRSSMB <= 0 || rep.PartSizeMB != 5 ||
		rep.Command != "go run ./bench_store -size 2 -reps 1 -part-size 5 -json" {
		t.Errorf("report: %+v", rep)
	}
}

// TestCleanupOnFailure: a child that cannot start still leaves no folder
// and no server behind, and the error says so.
func TestCleanupOnFailure(t *testing.T) {
	bin := needServer(t)
	var work, endpoint string
	cfg := config{SizeMB: 1, Reps: 1, Server: bin, Self: filepath.Join(t.TempDir(), "missing"),
		started: func(w, e string) { work, endpoint = w, e }}
	_, err := run(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		t.Fatal("run succeeded without a child binary")
	}
	if !strings.Contains(err.Error(), "snapshot+upload") {
		t.Errorf("error does not name the case: %v", err)
	}
	gone(t, work, endpoint)
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"-size", "0"}, 2},
		{[]string{"-reps", "0"}, 2},
		{[]string{"-nosuchflag"}, 2},
		{[]string{"-versitygw", "", "-size", "1"}, 1},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		if got := mainStatus(tt.args, &out, &errOut); got != tt.want {
			t.Errorf("%v: exit %d, want %d (%s)", tt.args, got, tt.want, errOut.String())
		}
		if out.Len() != 0 {
			t.Errorf("%v: printed on stdout: %s", tt.args, out.String())
		}
	}
}

func TestMedianAndRatios(t *testing.T) {
	for _, tt := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{4, 2}, 3}, {[]float64{9, 1, 5}, 5}, {[]float64{1, 100, 2, 3}, 2.5},
	} {
		if got := median(tt.xs); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.xs, got, tt.want)
		}
	}
	mk := func(op string, enc bool, sec float64, rssKiB int64) *Case {
		c := &Case{Op: op, Encrypted: enc, Runs: []Run{{childResult: childResult{DurationNS: int64(sec * 1e9), RawBytes: 10 << 20}, PeakRSSKiB: rssKiB}}}
		summarize(c)
		return c
	}
	for _, tt := range []struct {
		name            string
		plain, enc      float64
		rssKiB          int64
		wantPct         float64
		overhead, rssOK bool
	}{
		{"both met", 10, 11, 50 << 10, 10, true, true},
		{"at the bound", 10, 11.5, 99 << 10, 15, true, true},
		{"slow encryption", 10, 12, 50 << 10, 20, false, true},
		{"too much memory", 10, 10, 100 << 10, 0, true, false},
	} {
		r := ratios([]*Case{mk("snapshot", false, tt.plain, 1), mk("snapshot", true, tt.enc, tt.rssKiB), mk("restore", false, 1, 1), mk("restore", true, 1, 1)})
		if d := r.SnapshotEncryptionOverheadPct - tt.wantPct; d > 1e-9 || d < -1e-9 || r.OverheadMet != tt.overhead || r.PeakRSSMet != tt.rssOK {
			t.Errorf("%s: %+v", tt.name, r)
		}
	}
}
