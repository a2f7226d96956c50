package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"director/internal/testenv"
	"director/launcher"
)

// TestBenchRuns runs one iteration so that `make bench` cannot rot.
func TestBenchRuns(t *testing.T) {
	_, err := launcher.Find("")
	testenv.Require(t, "Chromium", err)
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
