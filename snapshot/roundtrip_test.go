package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
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
		"Default/Service Worker/Database/CURRENT", "Profile 1/Cache/keep-me",
		"Default/Current Session", "empty", "Default/IndexedDB/https_example.com_0.indexeddb.leveldb"} {
		if !slices.Contains(paths, p) {
			t.Errorf("%s is missing from the manifest", p)
		}
	}
	// Directories that hold a listed entry are implied (format 3), the
	// excluded one kept for an included path too; empty ones are listed.
	for _, p := range []string{"Default", "Default/Network", "Profile 1", "Profile 1/Cache"} {
		if slices.Contains(paths, p) {
			t.Errorf("directory %s, which holds listed entries, is listed", p)
		}
	}
	// The restored tree is compared over the listed paths and the
	// directories they imply.
	for _, p := range slices.Clone(paths) {
		for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
			paths = append(paths, d)
		}
	}

	// What Create returns is the stored copy: it parses, and it is what
	// Verify finds in the archive, against it or on the archive's own.
	stored, err := json.Marshal(m)
	must(t, err)
	if _, err := ParseManifest(stored); err != nil {
		t.Fatalf("the manifest Create returns does not parse: %v", err)
	}
	for _, opts := range []ExtractOptions{{}, {Expect: m}} {
		vm, err := Verify(context.Background(), bytes.NewReader(arc), opts)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if !reflect.DeepEqual(vm.Files, m.Files) || vm.FilesSHA256 != m.FilesSHA256 || !isSHA256Hex(vm.FilesSHA256) {
			t.Errorf("Verify (expect set: %v) found other hashes than Create made", opts.Expect != nil)
		}
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
	// Names that plain sha256sum output would escape.
	for _, name := range []string{`back\slash`, "new\nline", "sp ace"} {
		must(t, os.WriteFile(filepath.Join(src, "Default", name), []byte(name), 0o600))
	}
	m, arc := createArchive(t, src, CreateOptions{})
	f := filepath.Join(t.TempDir(), "a.tar.zst")
	must(t, os.WriteFile(f, arc, 0o600))
	out, err := exec.Command("tar", "--zstd", "-tf", f).CombinedOutput()
	if err != nil {
		t.Fatalf("tar -t: %v\n%s", err, out)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if string(lines[0]) != ManifestPath || string(lines[len(lines)-1]) != DigestPath || len(lines) != len(m.Files)+2 {
		t.Fatalf("tar lists %d entries from %q to %q, want %d from %s to %s", len(lines), lines[0], lines[len(lines)-1], len(m.Files)+2, ManifestPath, DigestPath)
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
	// The digest is what the README's coreutils recipe prints: a user with
	// plain tools can check an archive without director, odd names too.
	var list bytes.Buffer
	for _, f := range m.Files {
		if f.Type == TypeFile {
			list.WriteString(f.Path + "\x00")
		}
	}
	recipe := exec.Command("sh", "-c", `xargs -0 sha256sum --zero -- | tr '\0' '\n' | sha256sum`)
	recipe.Dir, recipe.Stdin = dst, &list
	out, err = recipe.Output()
	must(t, err)
	got, _, _ := strings.Cut(string(out), " ")
	db, err := os.ReadFile(filepath.Join(dst, DigestPath))
	must(t, err)
	if !bytes.Contains(db, []byte(got)) || m.FilesSHA256 != got {
		t.Errorf("%s holds %s; the README's sha256sum recipe gives %s, the manifest says %s", DigestPath, db, got, m.FilesSHA256)
	}
}
