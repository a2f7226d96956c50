package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"director/errcode"
	"director/internal/s3test"
)

// env is one backend under test, scoped to a fresh prefix or folder.
type env struct {
	store Store
	// raw lists every name the backend holds for this store, including
	// temporary files and pending multipart uploads, so that tests can see
	// litter that List hides.
	raw func(t *testing.T) []string
}

type backend struct {
	name   string
	newEnv func(t *testing.T) env
}

// backends returns the file, s3 (a real versitygw) and supabase (the
// protocol double) backends. The servers live as long as the calling test.
func backends(t *testing.T) []backend {
	var srv *s3test.Server
	if s3test.Binary() != "" {
		srv = s3test.Start(t)
	}
	supa := newSupabaseDouble(t)
	s3p := newS3PathDouble(t, false)
	t.Cleanup(func() { checkDoubleClean(t, s3p) })
	var n atomic.Int64
	return []backend{
		{"file", func(t *testing.T) env {
			dir := filepath.Join(t.TempDir(), "store")
			s := mustOpen(t, "file://"+dir, Options{})
			return env{store: s, raw: func(t *testing.T) []string {
				var out []string
				_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						rel, _ := filepath.Rel(dir, p)
						out = append(out, filepath.ToSlash(rel))
					}
					return nil
				})
				return out
			}}
		}},
		{"s3", func(t *testing.T) env {
			if srv == nil {
				s3test.Start(t) // fails under CI, skips otherwise
			}
			prefix := "case" + itoa(n.Add(1))
			s := mustOpen(t, srv.StoreURL(prefix), Options{AWSAccessKeyID: srv.AccessKey, AWSSecretAccessKey: srv.SecretKey})
			return env{store: s, raw: func(t *testing.T) []string {
				var out []string
				for _, k := range append(srv.Objects(srv.Bucket), srv.IncompleteUploads(srv.Bucket)...) {
					if rest, ok := strings.CutPrefix(k, prefix+"/"); ok {
						out = append(out, rest)
					}
				}
				return out
			}}
		}},
		{"supabase", func(t *testing.T) env {
			prefix := "case" + itoa(n.Add(1))
			s := mustOpen(t, "supabase:///"+prefix, supa.opts())
			d := supa
			t.Cleanup(func() {
				if f := d.authFailures(); f != 0 {
					t.Errorf("%d requests lacked the Bearer or apikey header", f)
				}
			})
			return env{store: s, raw: func(t *testing.T) []string {
				var out []string
				for _, k := range d.names(DefaultSupabaseBucket) {
					if rest, ok := strings.CutPrefix(k, prefix+"/"); ok {
						out = append(out, rest)
					}
				}
				return out
			}}
		}},
		// Supabase's S3 endpoint: a path below the host, re-signed requests
		// (s3path_double_test.go).
		{"s3path", func(t *testing.T) env { return s3PathEnv(t, s3p, "case"+itoa(n.Add(1))) }},
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func mustOpen(t testing.TB, rawURL string, opts Options) Store {
	t.Helper()
	s, err := Open(context.Background(), rawURL, opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", rawURL, err)
	}
	return s
}

func put(t *testing.T, s Store, key, data string) {
	t.Helper()
	if err := s.Put(context.Background(), key, strings.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func get(t *testing.T, s Store, key string) string {
	t.Helper()
	rc, _, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %q: %v", key, err)
	}
	return string(b)
}

func keys(objs []Object) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

func TestConformance(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, e env)
	}{
		{"round trip", testRoundTrip},
		{"never overwrites", testNoOverwrite},
		{"not found", testNotFound},
		{"prefix listing", testPrefixList},
		{"unknown size", testUnknownSize},
		{"wrong size leaves nothing", testWrongSize},
		{"invalid keys", testInvalidKeys},
		{"max size stops the upload", testMaxSize},
		{"cancelled put leaves nothing", testCancelledPut},
		{"large object streams", testLargeObject},
		{"check", testCheckOK},
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, b.newEnv(t)) })
			}
		})
	}
}

func testRoundTrip(t *testing.T, e env) {
	ctx := context.Background()
	s := e.store
	special := "work/with space #1 ?x=%20&y.tar.zst"
	if _, ok := s.(*supabaseStore); ok {
		// Supabase Storage refuses # and % in object names (see
		// supabaseRefuses); these still need escaping in a URL path.
		special = "work/with space (1) ?x=+&y=$;@,!.tar.zst"
	}
	for _, key := range []string{
		"work/work-20261122T031700Z-k3x9.tar.zst",
		special,
		"top-level.json",
		"ünïcödé/名前.tar.zst",
	} {
		data := "payload of " + key
		before := time.Now().Add(-time.Minute)
		put(t, s, key, data)
		o, err := s.Stat(ctx, key)
		if err != nil {
			t.Fatalf("Stat(%q): %v", key, err)
		}
		if o.Key != key || o.Size != int64(len(data)) || o.Modified.Before(before) {
			t.Errorf("Stat(%q) = %+v, want size %d and a recent time", key, o, len(data))
		}
		rc, go_, err := s.Get(ctx, key)
		if err != nil {
			t.Fatalf("Get(%q): %v", key, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(b) != data || go_.Size != int64(len(data)) {
			t.Errorf("Get(%q) = %q, %+v, %v; want %q", key, b, go_, err, data)
		}
	}
	objs, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"top-level.json", special, "work/work-20261122T031700Z-k3x9.tar.zst", "ünïcödé/名前.tar.zst"}
	if got := keys(objs); !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
	for _, k := range want {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%q): %v", k, err)
		}
		if _, err := s.Stat(ctx, k); !errors.Is(err, ErrNotFound) {
			t.Errorf("Stat after Delete(%q) = %v, want ErrNotFound", k, err)
		}
	}
	if left := e.raw(t); len(left) != 0 {
		t.Errorf("left after deleting everything: %q", left)
	}
}

func testNoOverwrite(t *testing.T, e env) {
	ctx := context.Background()
	put(t, e.store, "p/a.tar.zst", "first")
	err := e.store.Put(ctx, "p/a.tar.zst", strings.NewReader("second!"), 7)
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second Put = %v, want ErrExists", err)
	}
	if errcode.HintOf(err) == "" {
		t.Error("ErrExists without a hint")
	}
	err = e.store.Put(ctx, "p/a.tar.zst", strings.NewReader("third"), -1)
	if !errors.Is(err, ErrExists) {
		t.Fatalf("Put of unknown size = %v, want ErrExists", err)
	}
	if got := get(t, e.store, "p/a.tar.zst"); got != "first" {
		t.Errorf("object = %q after refused overwrites, want %q", got, "first")
	}
}

func testNotFound(t *testing.T, e env) {
	ctx := context.Background()
	put(t, e.store, "nf/present", "x")
	for _, key := range []string{"nf/missing.tar.zst", "nf/present/below", "other/missing"} {
		_, _, err := e.store.Get(ctx, key)
		if !errors.Is(err, ErrNotFound) || errcode.Of(err) != errcode.SnapshotNotFound || errcode.HintOf(err) == "" {
			t.Errorf("Get(%q) = %v (code %s), want snapshot_not_found wrapping ErrNotFound, with a hint", key, err, errcode.Of(err))
		}
		_, err = e.store.Stat(ctx, key)
		if !errors.Is(err, ErrNotFound) || errcode.Of(err) != errcode.SnapshotNotFound {
			t.Errorf("Stat(%q) = %v, want snapshot_not_found", key, err)
		}
		if err := e.store.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%q) of a missing object = %v, want nil", key, err)
		}
	}
	objs, err := e.store.List(ctx, "nothing-here/")
	if err != nil || len(objs) != 0 {
		t.Errorf("List of an empty prefix = %v, %v", objs, err)
	}
}

func testPrefixList(t *testing.T, e env) {
	ctx := context.Background()
	for _, k := range []string{"a/2", "a/1", "ab/3", "b/4", "a/deep/er/5", "A/6"} {
		put(t, e.store, k, k)
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"A/6", "a/1", "a/2", "a/deep/er/5", "ab/3", "b/4"}},
		{"a/", []string{"a/1", "a/2", "a/deep/er/5"}},
		{"a", []string{"a/1", "a/2", "a/deep/er/5", "ab/3"}},
		{"a/deep/", []string{"a/deep/er/5"}},
		{"a/de", []string{"a/deep/er/5"}},
		{"b/4", []string{"b/4"}},
		{"c/", []string{}},
	} {
		objs, err := e.store.List(ctx, tc.prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", tc.prefix, err)
		}
		if got := keys(objs); !slices.Equal(got, tc.want) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
		for _, o := range objs {
			if o.Size != int64(len(o.Key)) {
				t.Errorf("List(%q): %s has size %d, want %d", tc.prefix, o.Key, o.Size, len(o.Key))
			}
		}
	}
}

func testUnknownSize(t *testing.T, e env) {
	for _, data := range []string{"", "small body of unknown size"} {
		key := "u/" + itoa(int64(len(data)))
		if err := e.store.Put(context.Background(), key, io.MultiReader(strings.NewReader(data)), -1); err != nil {
			t.Fatalf("Put(size -1, %d bytes): %v", len(data), err)
		}
		if got := get(t, e.store, key); got != data {
			t.Errorf("got %q, want %q", got, data)
		}
	}
}

func testWrongSize(t *testing.T, e env) {
	ctx := context.Background()
	for _, tc := range []struct {
		data string
		size int64
	}{{"short", 10}, {"longer than said", 4}} {
		err := e.store.Put(ctx, "w/x", io.MultiReader(strings.NewReader(tc.data)), tc.size)
		if err == nil {
			t.Errorf("Put of %d bytes announced as %d succeeded", len(tc.data), tc.size)
		}
		if left := e.raw(t); len(left) != 0 {
			t.Errorf("left after a failed Put: %q", left)
		}
	}
}

func testInvalidKeys(t *testing.T, e env) {
	ctx := context.Background()
	for _, key := range []string{"", "/abs", "a/../b", "..", "a//b", "a/", `a\b`, "a/./b", "nul\x00", strings.Repeat("k", 1100)} {
		errs := []error{
			e.store.Put(ctx, key, strings.NewReader("x"), 1),
			e.store.Delete(ctx, key),
		}
		_, err := e.store.Stat(ctx, key)
		errs = append(errs, err)
		_, _, err = e.store.Get(ctx, key)
		errs = append(errs, err)
		for i, err := range errs {
			if errcode.Of(err) != errcode.InvalidInput || !errors.Is(err, ErrInvalidKey) {
				t.Errorf("call %d with key %q = %v, want invalid_input", i, key, err)
			}
		}
	}
	if _, err := e.store.List(ctx, "../x"); errcode.Of(err) != errcode.InvalidInput {
		t.Errorf("List(../x) = %v, want invalid_input", err)
	}
	if left := e.raw(t); len(left) != 0 {
		t.Errorf("invalid keys left %q", left)
	}
}

func testMaxSize(t *testing.T, e env) {
	ctx := context.Background()
	src := &genReader{size: 12 << 20}
	err := e.store.Put(ctx, "m/big.tar.zst", MaxSize(src, 7<<20), -1)
	if !errors.Is(err, ErrTooLarge) || errcode.Of(err) != errcode.InvalidInput || errcode.HintOf(err) == "" {
		t.Fatalf("Put beyond MaxSize = %v (code %s), want invalid_input wrapping ErrTooLarge", err, errcode.Of(err))
	}
	if left := e.raw(t); len(left) != 0 {
		t.Errorf("left after an oversized Put: %q", left)
	}
	// Exactly at the limit is fine.
	if err := e.store.Put(ctx, "m/exact", MaxSize(strings.NewReader("12345"), 5), -1); err != nil {
		t.Errorf("Put of exactly the limit: %v", err)
	}
}

func testCancelledPut(t *testing.T, e env) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &genReader{size: 64 << 20, at: 20 << 20, hook: cancel}
	for _, size := range []int64{-1, 64 << 20} {
		src.n = 0
		err := e.store.Put(ctx, "c/cancelled.tar.zst", src, size)
		if err == nil {
			t.Fatalf("cancelled Put (size %d) succeeded", size)
		}
		if ProblemOf(err) == ProblemBody {
			t.Errorf("cancelled Put reported as a body failure: %v", err)
		}
		if left := e.raw(t); len(left) != 0 {
			t.Errorf("left after a cancelled Put (size %d): %q", size, left)
		}
	}
}

// testLargeObject streams 64 MiB from a generator up and back down and
// checks the heap never holds more than a fraction of it.
func testLargeObject(t *testing.T, e env) {
	if testing.Short() {
		t.Skip("-short")
	}
	const size = 64 << 20
	const bound = 40 << 20
	ctx := context.Background()
	for _, announced := range []int64{-1, size} {
		key := "big/object-" + itoa(announced+1)
		src := &genReader{size: size}
		h := sha256.New()
		grow := heapGrowth(t, func() {
			if err := e.store.Put(ctx, key, io.TeeReader(src, h), announced); err != nil {
				t.Fatalf("Put: %v", err)
			}
		})
		t.Logf("put %d MiB (size %d): heap grew %.1f MiB", size>>20, announced, float64(grow)/(1<<20))
		if grow > bound {
			t.Errorf("heap grew %d MiB during a %d MiB upload, bound %d MiB", grow>>20, size>>20, bound>>20)
		}
		want := h.Sum(nil)
		h.Reset()
		grow = heapGrowth(t, func() {
			rc, o, err := e.store.Get(ctx, key)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			defer rc.Close()
			n, err := io.Copy(h, rc)
			if err != nil || n != size || o.Size != size {
				t.Fatalf("read %d bytes (object says %d), %v; want %d", n, o.Size, err, size)
			}
		})
		t.Logf("get %d MiB: heap grew %.1f MiB", size>>20, float64(grow)/(1<<20))
		if grow > bound {
			t.Errorf("heap grew %d MiB during a %d MiB download, bound %d MiB", grow>>20, size>>20, bound>>20)
		}
		if !bytes.Equal(h.Sum(nil), want) {
			t.Error("downloaded bytes differ from the uploaded ones")
		}
		if err := e.store.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
}

func testCheckOK(t *testing.T, e env) {
	rep := Check(context.Background(), e.store)
	if !rep.OK || rep.Err() != nil {
		t.Fatalf("Check = %+v", rep)
	}
	var names []string
	for _, st := range rep.Steps {
		names = append(names, st.Name)
		if !st.OK || st.Skipped {
			t.Errorf("step %+v not ok", st)
		}
	}
	if want := []string{"put", "stat", "list", "get", "delete"}; !slices.Equal(names, want) {
		t.Errorf("steps %q, want %q", names, want)
	}
	if left := e.raw(t); len(left) != 0 {
		t.Errorf("Check left %q", left)
	}
}

// heapGrowth runs fn and returns how far the heap in use rose above where it
// started, sampled every few milliseconds with a tight GC target.
func heapGrowth(t *testing.T, fn func()) uint64 {
	old := debug.SetGCPercent(10)
	defer debug.SetGCPercent(old)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

// genReader yields size pseudo-random bytes without holding them; when it
// has produced at bytes it calls hook once.
type genReader struct {
	size, n, at int64
	hook        func()
}

var pattern = func() []byte {
	b := make([]byte, 1<<20+13) // odd length, so blocks do not repeat at part boundaries
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

func (g *genReader) Read(p []byte) (int, error) {
	if g.n >= g.size {
		return 0, io.EOF
	}
	if g.hook != nil && g.n >= g.at {
		g.hook()
	}
	if rem := min(g.size-g.n, 256<<10); int64(len(p)) > rem {
		p = p[:rem] // small reads, so that hooks fire where asked
	}
	off := int(g.n % int64(len(pattern)))
	n := copy(p, pattern[off:])
	g.n += int64(n)
	return n, nil
}
