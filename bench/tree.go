package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// genTree writes a profile-like tree of about size bytes and returns its
// number of files:
//   - 60%: large SQLite/LevelDB-like files of 10-20 MB, alternately
//     compressible (JSON-ish records) and random (already compressed or
//     encrypted content);
//   - 30%: a few thousand small files (1-32 KB) in nested directories,
//     the same half-and-half mix;
//   - 10%: Chrome caches (Default/Cache, Code Cache, GPUCache) that the
//     default excludes leave out.
func genTree(dir string, size int64) (int, error) {
	rng := rand.New(rand.NewPCG(42, 4242))
	text := []byte{}
	for i := 0; len(text) < 1<<16; i++ {
		text = fmt.Appendf(text, `{"host_key":".site%d.example.com","name":"sid%d","value":"%x","path":"/","expires_utc":%d,"is_secure":1},`,
			i%97, i%13, rng.Uint64(), 13370000000000000+rng.IntN(1e9))
	}
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
			off := rng.IntN(len(text) - 512)
			i += copy(b[i:], text[off:off+64+rng.IntN(400)])
			if i < len(b) {
				b[i] = byte(rng.IntN(256))
				i++
			}
		}
	}
	files := 0
	chunk := make([]byte, 1<<20)
	write := func(rel string, n int64, random bool) error {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		for n > 0 { // in chunks: this process's RSS is a floor under its children's
			b := chunk[:min(n, int64(len(chunk)))]
			fill(b, random)
			if _, err := f.Write(b); err != nil {
				return err
			}
			n -= int64(len(b))
		}
		files++
		return f.Close()
	}
	var written int64
	bigNames := []string{"Default/History", "Default/IndexedDB/https_mail.example.com_0.indexeddb.leveldb/000005.ldb",
		"Default/Favicons", "Default/Local Storage/leveldb/000004.ldb", "Default/Web Data",
		"Default/Network/Cookies", "Default/Service Worker/Database/000003.log", "Default/Top Sites"}
	for i := 0; written < size*6/10; i++ {
		n := min(int64(10<<20+rng.IntN(10<<20)), size*6/10-written)
		name := bigNames[i%len(bigNames)]
		if i >= len(bigNames) {
			name = fmt.Sprintf("Default/IndexedDB/https_app%d.example.com_0.indexeddb.leveldb/%06d.ldb", i, i)
		}
		if err := write(name, n, i%2 == 1); err != nil {
			return files, err
		}
		written += n
	}
	for i := 0; written < size*9/10; i++ {
		n := int64(1<<10 + rng.IntN(31<<10))
		rel := fmt.Sprintf("Default/IndexedDB/https_site%d.example.com_0.indexeddb.blob/%d/%02x/%d", i%40, i%7, i%256, i)
		if i%3 == 0 {
			rel = fmt.Sprintf("Default/Local Extension Settings/ext%02d/%06d.log", i%50, i)
		}
		if err := write(rel, n, i%2 == 1); err != nil {
			return files, err
		}
		written += n
	}
	caches := []string{"Default/Cache/Cache_Data", "Default/Code Cache/js", "Default/GPUCache"}
	for i := 0; written < size; i++ {
		n := int64(4<<10 + rng.IntN(60<<10))
		if err := write(fmt.Sprintf("%s/%016x_0", caches[i%3], rng.Uint64()), n, i%2 == 1); err != nil {
			return files, err
		}
		written += n
	}
	for rel, body := range map[string]string{"Local State": `{"profile":{}}`, "Last Version": "131.0.6778.85",
		"Default/Preferences": `{"browser":{}}`, "Default/Secure Preferences": `{}`} {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o600); err != nil {
			return files, err
		}
		files++
	}
	return files, nil
}
