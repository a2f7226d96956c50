package main

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// --max-size and DIRECTOR_MAX_SIZE take human sizes as well as bytes: a
// size that is read is the limit a snapshot then keeps to (1KiB refuses a
// profile of 8 KiB, saying 1KiB), and one that is not is invalid_input
// naming where it came from and the forms that are taken.
func TestMaxSizeTakesHumanSizes(t *testing.T) {
	home := cliEnv(t)
	createWork(t, home, noise(t, 8<<10)) // does not compress below 1.5 KiB
	for _, c := range []struct {
		value string
		ok    bool
		says  string // in the message of an error
	}{
		{"524288000", true, ""},
		{"500MB", true, ""},
		{"500M", true, ""},
		{"1.5GiB", true, ""},
		{"2g", true, ""},
		{"1KiB", false, "larger than --max-size, 1KiB"},
		{"1.5k", false, "larger than --max-size, 1536"},
		{"abc", false, "is not a size"},
		{"-5", false, "is negative"},
		{"0", false, "is zero"},
		{"1.5", false, "not a whole number of bytes"},
		{"5XB", false, "unknown unit"},
		{"99999999999TB", false, "too large"},
	} {
		for _, viaEnv := range []bool{false, true} {
			name := map[bool]string{false: "--max-size", true: "DIRECTOR_MAX_SIZE"}[viaEnv]
			t.Run(name+"="+c.value, func(t *testing.T) {
				args := []string{"--home", home, "--json", "profile", "snapshot", "work"}
				if viaEnv {
					t.Setenv("DIRECTOR_MAX_SIZE", c.value)
				} else {
					args = append(args, "--max-size="+c.value)
				}
				code, out, errOut := runDirector(t, args...)
				m := decodeJSON(t, out)
				if c.ok {
					if code != 0 {
						t.Fatalf("exit %d: %s %s", code, out, errOut)
					}
					return
				}
				e, _ := m["error"].(map[string]any)
				msg, _ := e["message"].(string)
				hint, _ := e["hint"].(string)
				if code != 2 || e["code"] != "invalid_input" || !strings.Contains(msg, c.says) {
					t.Fatalf("exit %d, %s; want invalid_input saying %q", code, out, c.says)
				}
				if strings.Contains(msg, "larger than") {
					return // read, and refused by the snapshot
				}
				if !strings.Contains(msg, "invalid "+name) || !strings.Contains(hint, "give "+name+" as bytes (524288000) or a number with a unit: 500MB, 500M, 1.5GiB, 2g") {
					t.Errorf("message %q, hint %q: want them to name %s and show the forms", msg, hint, name)
				}
			})
		}
	}
	// The help shows the forms, and the default as one.
	_, out, _ := runDirector(t, "--help")
	for _, want := range []string{"--max-size SIZE", "500MB is 500×10^6 bytes", `(default: "500MiB")`} {
		if !strings.Contains(out, want) {
			t.Errorf("director --help lacks %q:\n%s", want, out)
		}
	}
}

// --max-unpacked and DIRECTOR_MAX_UNPACKED bound profile snapshot's
// up-front refusal, verify and restore (and a run's restore, which reaches
// no browser when it is refused), each refusal naming the setting and a
// size that takes the snapshot; a size it cannot read is invalid_input
// naming where it came from.
func TestMaxUnpackedSetting(t *testing.T) {
	home := cliEnv(t)
	d := func(args ...string) (int, map[string]any) {
		t.Helper()
		code, out, _ := runDirector(t, append([]string{"--home", home, "--json"}, args...)...)
		return code, decodeJSON(t, out)
	}
	refusal := func(t *testing.T, m map[string]any, code string) string {
		t.Helper()
		e, _ := m["error"].(map[string]any)
		hint, _ := e["hint"].(string)
		mt := regexp.MustCompile(`set --max-unpacked \(or DIRECTOR_MAX_UNPACKED\) to (\S+) or more`).FindStringSubmatch(hint)
		if e["code"] != code || mt == nil {
			t.Fatalf("%v: want %s with a hint naming --max-unpacked and a size", m, code)
		}
		return mt[1]
	}
	createWork(t, home, []byte(strings.Repeat("x", 64<<10)))

	code, m := d("profile", "snapshot", "work", "--max-unpacked", "16KiB")
	if code != 2 {
		t.Fatalf("snapshot over --max-unpacked: exit %d", code)
	}
	enough := refusal(t, m, "invalid_input")
	code, m = d("profile", "snapshot", "work", "--max-unpacked", enough)
	if code != 0 {
		t.Fatalf("snapshot with the suggested --max-unpacked %s: %v", enough, m)
	}

	t.Setenv("DIRECTOR_MAX_UNPACKED", "16k")
	for _, args := range [][]string{{"profile", "verify", "work"}, {"profile", "restore", "work", "latest"}} {
		code, m := d(args...)
		if code != 1 {
			t.Fatalf("%q under DIRECTOR_MAX_UNPACKED=16k: exit %d, %v", args, code, m)
		}
		enough := refusal(t, m, "unsafe_archive")
		if code, m := d(append(args, "--max-unpacked", enough)...); code != 0 {
			t.Fatalf("%q with the suggested --max-unpacked %s: %v", args, enough, m)
		}
	}
	wf := filepath.Join(t.TempDir(), "refresh.yaml")
	if err := os.WriteFile(wf, []byte("name: r\nprofile: work\nrestore: latest\nsteps:\n  - navigate: http://127.0.0.1:1/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runDirector(t, "--home", home, "--json", "run", wf)
	if code != 1 || !strings.Contains(out, "unsafe_archive") || !strings.Contains(out, "--max-unpacked") {
		t.Errorf("run whose restore is over DIRECTOR_MAX_UNPACKED: exit %d, %s %s", code, out, errOut)
	}

	for _, viaEnv := range []bool{false, true} {
		args := []string{"profile", "verify", "work"}
		name := "--max-unpacked"
		if viaEnv {
			t.Setenv("DIRECTOR_MAX_UNPACKED", "0")
			name = "DIRECTOR_MAX_UNPACKED"
		} else {
			args = append(args, "--max-unpacked", "lots")
		}
		code, m := d(args...)
		e, _ := m["error"].(map[string]any)
		if msg, _ := e["message"].(string); code != 2 || e["code"] != "invalid_input" || !strings.Contains(msg, "invalid "+name) {
			t.Errorf("bad %s: exit %d, %v", name, code, m)
		}
	}
}

// createWork creates profile work in home holding data in Default/blob.
func createWork(t *testing.T, home string, data []byte) {
	t.Helper()
	if code, _, errOut := runDirector(t, "--home", home, "profile", "create", "work"); code != 0 {
		t.Fatal(errOut)
	}
	blob := filepath.Join(home, "browser-profiles", "work", "Default", "blob")
	if err := os.MkdirAll(filepath.Dir(blob), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blob, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// noise is n random bytes, which do not compress.
func noise(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}
