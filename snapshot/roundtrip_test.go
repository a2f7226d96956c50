package snapshot

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"director/internal/testenv"
)

func TestRoundTrip(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, profileTree())
	must(t, os.Chmod(filepath.Join(src, "Default", "Preferences"), 0o644))
	m, arc := createArchive(t, src, CreateOptions{ID: "p-1", Profile: "p", Includes: []string{"Profile 1/Cache/keep-me"}})

	if m.ChromeVersion != "131.0.6778.85" {
		t.Errorf("ChromeVersion = %q", m.ChromeVersion)
	}
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Path)
	}
	for _, p := range []string{"SingletonLock", "SingletonCookie", "SingletonSocket", "DevToolsActivePort",
		"BrowserMetrics", "BrowserMetrics-spare.pma", "Crashpad", "Default/Cache", "Default/Code Cache",
		"Default/Service Worker/CacheStorage", "Default/GPUCache", "Profile 1/Cache/Cache_Data"} {
		if slices.Contains(paths, p) {
			t.Errorf("%s was archived", p)
		}
	}
	for _, p := range []string{"Local State", "Default/Network/Cookies", "Default/Network/Cookies-journal",
		"Default/Service Worker/Database/CURRENT", "Profile 1/Cache", "Profile 1/Cache/keep-me",
		"Default/Current Session", "empty", "Default/IndexedDB/https_example.com_0.indexeddb.leveldb"} {
		if !slices.Contains(paths, p) {
			t.Errorf("%s is missing from the manifest", p)
		}
	}

	if _, err := Verify(context.Background(), bytes.NewReader(arc), ExtractOptions{}); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	parent := t.TempDir()
	dst := filepath.Join(parent, "p")
	got, err := Restore(context.Background(), bytes.NewReader(arc), dst, RestoreOptions{})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got.ID != "p-1" || len(got.Files) != len(m.Files) {
		t.Errorf("restored manifest %q with %d files", got.ID, len(got.Files))
	}
	if e := entries(t, parent); !slices.Equal(e, []string{"p"}) {
		t.Errorf("parent holds %v", e)
	}
	// Same content and types; modes normalised to 0700/0600.
	want := dirState(t, src)
	have := dirState(t, dst)
	for p, w := range want {
		if !slices.Contains(paths, filepath.ToSlash(p)) && p != "." {
			continue
		}
		h := have[p]
		w = normaliseMode(w)
		if h != w {
			t.Errorf("%s: restored %q, want %q", p, h, w)
		}
	}
	for p := range have {
		if _, ok := want[p]; !ok {
			t.Errorf("%s restored but not in the source", p)
		}
	}

	// Restoring again swaps over the existing profile.
	must(t, os.WriteFile(filepath.Join(dst, "stale"), []byte("x"), 0o600))
	if _, err := Restore(context.Background(), bytes.NewReader(arc), dst, RestoreOptions{}); err != nil {
		t.Fatalf("second Restore: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "stale")); !os.IsNotExist(err) {
		t.Errorf("old profile content survived the swap")
	}
	if e := entries(t, parent); !slices.Equal(e, []string{"p"}) {
		t.Errorf("parent holds %v after the swap", e)
	}
}

func normaliseMode(s string) string {
	switch {
	case len(s) > 4 && s[:4] == "dir ":
		return "dir -rwx------"
	case len(s) > 5 && s[:5] == "file ":
		return "file -rw-------" + s[15:]
	}
	return s
}

// Plain tar with zstd reads our archives.
func TestPlainTarReadsArchive(t *testing.T) {
	_, err := exec.LookPath("zstd")
	testenv.Require(t, "the zstd binary (tar --zstd runs it)", err)
	src := t.TempDir()
	writeTree(t, src, profileTree())
	m, arc := createArchive(t, src, CreateOptions{})
	f := filepath.Join(t.TempDir(), "a.tar.zst")
	must(t, os.WriteFile(f, arc, 0o600))
	out, err := exec.Command("tar", "--zstd", "-tf", f).CombinedOutput()
	if err != nil {
		t.Fatalf("tar -t: %v\n%s", err, out)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if string(lines[0]) != ManifestPath || len(lines) != len(m.Files)+1 {
		t.Fatalf("tar lists %d entries starting %q, want %d starting %s", len(lines), lines[0], len(m.Files)+1, ManifestPath)
	}
	dst := t.TempDir()
	if out, err := exec.Command("tar", "--zstd", "-xf", f, "-C", dst).CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dst, "Default", "Network", "Cookies"))
	must(t, err)
	w, _ := os.ReadFile(filepath.Join(src, "Default", "Network", "Cookies"))
	if !bytes.Equal(b, w) {
		t.Error("tar extracted different Cookies content")
	}
	mb, err := os.ReadFile(filepath.Join(dst, ManifestPath))
	must(t, err)
	if _, err := ParseManifest(mb); err != nil {
		t.Errorf("manifest extracted by tar does not parse: %v", err)
	}
}
