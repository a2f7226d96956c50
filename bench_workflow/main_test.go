package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// TestBenchRuns runs one iteration so that `make bench` cannot rot.
func TestBenchRuns(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil && os.Getenv("CHROME_PATH") == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is required in CI")
		}
		t.Skip("chromium not found")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	var out bytes.Buffer
	if err := run(1, true, "", &out); err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.PlainTotalMS <= 0 || rep.DirectorTotalMS <= 0 || rep.RestorePlusLaunch <= 0 {
		t.Fatalf("report %s: %v", out.String(), err)
	}
}
