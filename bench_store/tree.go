package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// treeStats describes a generated tree.
type treeStats struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// genTree writes a profile-like tree of about size bytes under dir:
// about 70% in large files of 10-20 MB (SQLite- and LevelDB-like names) and
// 30% in a few thousand small files of 1-32 KB in nested folders. Half the
// bytes are compressible (JSON-ish records, or 4 KiB SQLite-like pages that
// are mostly free space) and half random, as already compressed or encrypted
// content is. The content is the same for the same size.
func genTree(dir string, size int64) (treeStats, error) {
	var st treeStats
	rng := rand.New(rand.NewPCG(6, 600))
	cc := rand.NewChaCha8([32]byte{'d', 'i', 'r', 'e', 'c', 't', 'o', 'r'})
	var text []byte
	for i := 0; len(text) < 1<<16; i++ {
		text = fmt.Appendf(text, `{"host_key":".site%d.example.com","name":"sid%d","value":"%x","path":"/","expires_utc":%d,"is_secure":1},`,
			i%97, i%13, rng.Uint64(), 13370000000000000+rng.IntN(1e9))
	}
	// kind 0: random, 1: JSON-ish text, 2: SQLite-like pages.
	fill := func(b []byte, kind int) {
		switch kind {
		case 0:
			_, _ = cc.Read(b)
		case 1:
			for i := 0; i < len(b); {
				off := rng.IntN(len(text) - 512)
				i += copy(b[i:], text[off:off+64+rng.IntN(400)])
			}
		default:
			for p := 0; p < len(b); p += 4096 {
				page := b[p:min(p+4096, len(b))]
				clear(page)
				if len(page) >= 8 {
					page[0] = 0x0d // table b-tree leaf page
					binary.BigEndian.PutUint16(page[3:], uint16(rng.IntN(40)))
				}
				used := rng.IntN(len(page) / 2)
				off := rng.IntN(len(text) - 2048)
				copy(page[len(page)-used:], text[off:off+used])
			}
		}
	}
	write := func(rel string, n int64, kind int) error {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		buf := make([]byte, min(n, 1<<20))
		for left := n; left > 0; left -= int64(len(buf)) {
			buf = buf[:min(left, int64(len(buf)))]
			fill(buf, kind)
			if _, err := w.Write(buf); err != nil {
				f.Close()
				return err
			}
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		st.Files++
		st.Bytes += n
		return f.Close()
	}

	big := []string{"Default/History", "Default/Favicons", "Default/Web Data", "Default/Network/Cookies",
		"Default/Local Storage/leveldb/000004.ldb", "Default/Service Worker/Database/000003.log"}
	// Random content whenever less of it than of compressible content has
	// been written, so that the halves stay even at any size.
	var random, compressible int64
	kindFor := func(n int64, alt int) int {
		if random < compressible {
			random += n
			return 0
		}
		compressible += n
		return 1 + alt%2
	}
	for i := 0; st.Bytes < size*7/10; i++ {
		// 10-20 MB, but at least several large files in a small tree.
		n := min(int64(10<<20+rng.IntN(10<<20)), max(size/10, 64<<10), size*7/10-st.Bytes)
		name := fmt.Sprintf("Default/IndexedDB/https_app%d.example.com_0.indexeddb.leveldb/%06d.ldb", i, i)
		if i < len(big) {
			name = big[i]
		}
		if err := write(name, n, kindFor(n, i/2)); err != nil {
			return st, err
		}
	}
	for i := 0; st.Bytes < size; i++ {
		n := min(int64(1<<10+rng.IntN(31<<10)), size-st.Bytes)
		rel := fmt.Sprintf("Default/IndexedDB/https_site%d.example.com_0.indexeddb.blob/%d/%02x/%d", i%40, i%7, i%256, i)
		if i%3 == 0 {
			rel = fmt.Sprintf("Default/Local Extension Settings/ext%02d/%06d.log", i%50, i)
		}
		if err := write(rel, n, kindFor(n, 0)); err != nil {
			return st, err
		}
	}
	for rel, body := range map[string]string{"Local State": `{"profile":{"info_cache":{}}}`,
		"Last Version": "131.0.6778.85", "Default/Preferences": `{"browser":{}}`, "Default/Secure Preferences": `{}`} {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o600); err != nil {
			return st, err
		}
		st.Files++
		st.Bytes += int64(len(body))
	}
	return st, nil
}
