package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"director/errcode"
)

// writeTree creates files under dir from a map of relative path -> content;
// a path ending in "/" is a directory, content "->target" makes a symlink.
func writeTree(t testing.TB, dir string, tree map[string]string) {
	t.Helper()
	paths := make([]string, 0, len(tree))
	for p := range tree {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		c := tree[p]
		if strings.HasSuffix(p, "/") {
			must(t, os.MkdirAll(full, 0o700))
			continue
		}
		must(t, os.MkdirAll(filepath.Dir(full), 0o700))
		if strings.HasPrefix(c, "->") {
			must(t, os.Symlink(strings.TrimPrefix(c, "->"), full))
			continue
		}
		must(t, os.WriteFile(full, []byte(c), 0o600))
	}
}

// profileTree is a small realistic Chrome user-data-dir.
func profileTree() map[string]string {
	return map[string]string{
		"Local State":                                              `{"profile":{"info_cache":{}}}`,
		"Last Version":                                             "131.0.6778.85\n",
		"SingletonLock":                                            "->host-1234",
		"SingletonCookie":                                          "->123456",
		"SingletonSocket":                                          "->/tmp/.org.chromium.Chromium.x/SingletonSocket",
		"DevToolsActivePort":                                       "9222\n/devtools/browser/x",
		"BrowserMetrics/BrowserMetrics-1.pma":                      strings.Repeat("m", 3000),
		"BrowserMetrics-spare.pma":                                 strings.Repeat("s", 100),
		"Crashpad/settings.dat":                                    "crash",
		"Default/Preferences":                                      `{"browser":{}}`,
		"Default/Secure Preferences":                               `{}`,
		"Default/Network/Cookies":                                  strings.Repeat("SQLite format 3\x00", 500),
		"Default/Network/Cookies-journal":                          "",
		"Default/Local Storage/leveldb/000003.log":                 strings.Repeat("ldb", 700),
		"Default/Local Storage/leveldb/CURRENT":                    "MANIFEST-000001\n",
		"Default/Local Storage/leveldb/LOCK":                       "",
		"Default/IndexedDB/https_example.com_0.indexeddb.leveldb/": "",
		"Default/Session Storage/":                                 "",
		"Default/Cache/Cache_Data/data_0":                          strings.Repeat("c", 5000),
		"Default/Cache/Cache_Data/index":                           "idx",
		"Default/Code Cache/js/index":                              "js",
		"Default/Service Worker/CacheStorage/x":                    "sw",
		"Default/Service Worker/Database/CURRENT":                  "sw-db",
		"Default/GPUCache/data_1":                                  "gpu",
		"Profile 1/Cache/keep-me":                                  "re-included",
		"Profile 1/Preferences":                                    "{}",
		"Default/Current Session":                                  "->../Default/Preferences",
		"Default/link-to-dir":                                      "->Network",
		"empty/":                                                   "",
	}
}

// dirState describes a tree exactly: path -> type, mode and content hash.
func dirState(t testing.TB, dir string) map[string]string {
	t.Helper()
	st := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			st[rel] = "symlink " + l
		case d.IsDir():
			st[rel] = "dir " + fi.Mode().Perm().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			st[rel] = "file " + fi.Mode().Perm().String() + " " + hex.EncodeToString(s[:])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func entries(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	return names
}

func createArchive(t testing.TB, dir string, opts CreateOptions) (*Manifest, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if opts.CreatedAt.IsZero() {
		opts.CreatedAt = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	}
	m, err := Create(context.Background(), dir, &buf, opts)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return m, buf.Bytes()
}

func wantCode(t testing.TB, err error, code errcode.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	if got := errcode.Of(err); got != code {
		t.Fatalf("got code %s (%v), want %s", got, err, code)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// genTree writes a profile-like tree of about size bytes: many small files
// and a few large ones, half compressible text-ish data and half random.
func genTree(t testing.TB, dir string, size int64, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	text := []byte(strings.Repeat(`{"key":"value","expires":13370000000,"path":"/","secure":true,"domain":".example.com"} `, 64))
	fill := func(b []byte, random bool) {
		if random {
			for i := 0; i+8 <= len(b); i += 8 {
				v := rng.Uint64()
				for k := 0; k < 8; k++ {
					b[i+k] = byte(v >> (8 * k))
				}
			}
			return
		}
		for i := 0; i < len(b); {
			off := rng.IntN(len(text) / 2)
			n := copy(b[i:], text[off:off+rng.IntN(200)+50])
			i += n
			if i < len(b) {
				b[i] = byte(rng.IntN(256))
				i++
			}
		}
	}
	var written int64
	big := size * 6 / 10
	for i := 0; written < big; i++ {
		n := int64(10<<20 + rng.IntN(10<<20))
		if n > big-written {
			n = big - written
		}
		b := make([]byte, n)
		fill(b, i%2 == 1)
		p := filepath.Join(dir, "Default", "IndexedDB", "big", "db"+string(rune('a'+i)))
		must(t, os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, os.WriteFile(p, b, 0o600))
		written += n
	}
	for i := 0; written < size; i++ {
		n := int64(rng.IntN(32<<10) + 1)
		b := make([]byte, n)
		fill(b, i%2 == 1)
		p := filepath.Join(dir, "Default", "Storage", string(rune('a'+i%20)), string(rune('a'+(i/20)%20)), "f"+hex.EncodeToString([]byte{byte(i >> 8), byte(i)}))
		must(t, os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, os.WriteFile(p, b, 0o600))
		written += n
	}
}
