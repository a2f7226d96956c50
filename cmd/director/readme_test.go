package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"director/snapshot"
)

// README's table of default excludes lists exactly snapshot.DefaultExcludes,
// in order.
func TestREADMEListsDefaultExcludes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "### What is excluded")
	end := strings.Index(readme[max(start, 0):], "The runtime files")
	if start < 0 || end < 0 {
		t.Fatal("README has no \"What is excluded\" section")
	}
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(readme[start:start+end], -1) {
		listed = append(listed, m[1])
	}
	if want := snapshot.DefaultExcludes(); !slices.Equal(listed, want) {
		t.Errorf("README lists %q\nthe code excludes %q", listed, want)
	}
}

// TestCronExamplesPrune: every refresh that passes adds a snapshot and
// nothing else deletes one, so the cron and systemd examples of README and
// docs/workflows.md must prune too (they did not: followed literally, the
// store grew by four snapshots a day for ever). Each example's prune
// command is run as written, on a home whose profile has 10 snapshots, and
// must leave the newest 8.
func TestCronExamplesPrune(t *testing.T) {
	for _, file := range []string{"README.md", filepath.Join("docs", "workflows.md")} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", file))
			if err != nil {
				t.Fatal(err)
			}
			var cron, systemd []string
			for _, m := range regexp.MustCompile("(?s)```(cron|ini)\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
				for _, line := range strings.Split(m[2], "\n") {
					if !strings.Contains(line, "director profile prune") {
						continue
					}
					if m[1] == "cron" {
						cron = append(cron, line)
					} else if strings.HasPrefix(line, "ExecStartPost=") {
						systemd = append(systemd, line)
					}
				}
			}
			if len(cron) != 1 || len(systemd) != 1 {
				t.Fatalf("%s: prune lines in cron blocks %q, in systemd units %q; want one of each", file, cron, systemd)
			}
			for _, line := range append(cron, systemd...) {
				fields := strings.Fields(line)
				i := slices.IndexFunc(fields, func(f string) bool { return strings.HasSuffix(f, "/director") })
				if i < 0 {
					t.Fatalf("no director in %q", line)
				}
				args := fields[i+1:]
				name := args[slices.IndexFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") && a != "profile" && a != "prune" })]
				home := cliEnv(t)
				d := func(args ...string) (int, string, string) {
					return runDirector(t, append([]string{"--home", home}, args...)...)
				}
				if code, _, errOut := d("profile", "create", name); code != 0 {
					t.Fatalf("create %s: %s", name, errOut)
				}
				var ids []string
				for range 10 {
					code, out, errOut := d("--json", "profile", "snapshot", name)
					if code != 0 {
						t.Fatalf("snapshot: %s", errOut)
					}
					ids = append(ids, decodeJSON(t, out)["snapshot"].(map[string]any)["id"].(string))
				}
				if code, out, errOut := d(args...); code != 0 || out != "" || errOut != "" {
					t.Fatalf("%q: exit %d, stdout %q, stderr %q (cron mails any output)", line, code, out, errOut)
				}
				code, out, errOut := d("--json", "profile", "snapshots", name)
				if code != 0 {
					t.Fatal(errOut)
				}
				var left []string
				for _, s := range decodeJSON(t, out)["snapshots"].([]any) {
					left = append(left, s.(map[string]any)["id"].(string))
				}
				want := slices.Clone(ids[2:]) // ids of one second are not in time order: compare sets
				slices.Sort(left)
				slices.Sort(want)
				if !slices.Equal(left, want) {
					t.Errorf("%q left %q, want the newest 8 %q", line, left, want)
				}
			}
		})
	}
}

// TestREADMERecipientsSetting: README's environment table says what
// --age-recipients takes as its help does, public keys or a recipients file
// (it spoke of public keys alone), and a recipients file works as it says.
func TestREADMERecipientsSetting(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `DIRECTOR_AGE_RECIPIENTS` \\|.*$").FindString(string(b))
	var usage string
	for _, fl := range encryptionFlags() {
		if f, ok := fl.(*settingFlag); ok && f.Name == "age-recipients" {
			usage = f.Usage
		}
	}
	for _, what := range []string{"public", "age1…", "recipients file"} {
		if !strings.Contains(usage, what) || !strings.Contains(row, what) {
			t.Errorf("--age-recipients help %q and README row %q: want both to say %q", usage, row, what)
		}
	}
	home := withProfile(t)
	id := filepath.Join(t.TempDir(), "id.txt")
	_, out, _ := runDirector(t, "--home", home, "key", "generate", "--out", id)
	pub := regexp.MustCompile(`age1[0-9a-z]+`).FindString(out)
	file := filepath.Join(t.TempDir(), "recipients.txt")
	if err := os.WriteFile(file, []byte("# the restoring machine\n"+pub+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runDirector(t, "--home", home, "--json", "--age-recipients", file, "profile", "snapshot", "work"); code != 0 ||
		decodeJSON(t, out)["snapshot"].(map[string]any)["encrypted"] != true {
		t.Errorf("snapshot encrypted to a recipients file: exit %d %s %s", code, out, errOut)
	}
}
