package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"director/errcode"
)

func TestMaxSize(t *testing.T) {
	tests := []struct {
		name    string
		data    int
		limit   int64
		wantErr bool
	}{
		{"under", 10, 11, false},
		{"exact", 10, 10, false},
		{"empty at zero", 0, 0, false},
		{"one over", 11, 10, true},
		{"far over", 1 << 20, 1000, true},
		{"any byte over zero", 1, 0, true},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			src := io.Reader(bytes.NewReader(bytes.Repeat([]byte("x"), tt.data)))
			if oneByte {
				src = iotest.OneByteReader(src)
			}
			got, err := io.ReadAll(MaxSize(src, tt.limit))
			if int64(len(got)) > tt.limit {
				t.Errorf("%s: passed on %d bytes, limit %d", tt.name, len(got), tt.limit)
			}
			if tt.wantErr != (err != nil) {
				t.Errorf("%s: err = %v, want error %v", tt.name, err, tt.wantErr)
			}
			if err != nil && (!errors.Is(err, ErrTooLarge) || errcode.Of(err) != errcode.InvalidInput || errcode.HintOf(err) == "") {
				t.Errorf("%s: err = %v, want invalid_input wrapping ErrTooLarge with a hint", tt.name, err)
			}
			if err == nil && len(got) != tt.data {
				t.Errorf("%s: got %d bytes, want %d", tt.name, len(got), tt.data)
			}
		}
	}
	// A source error passes through unchanged.
	boom := errors.New("boom")
	if _, err := io.ReadAll(MaxSize(iotest.ErrReader(boom), 10)); !errors.Is(err, boom) {
		t.Errorf("source error = %v", err)
	}
}

func TestRetryPolicy(t *testing.T) {
	p := RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}.withDefaults()
	if p.Attempts != 4 {
		t.Errorf("default attempts %d", p.Attempts)
	}
	for attempt, full := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		full *= time.Millisecond
		for range 50 {
			d := p.delay(attempt + 1)
			if d < full/2 || d > full {
				t.Fatalf("delay(%d) = %v, want within [%v, %v]", attempt+1, d, full/2, full)
			}
		}
	}

	transient := fail(&fileStore{dir: "/x"}, "op", ProblemServer, true, "", errors.New("503"))
	permanent := fail(&fileStore{dir: "/x"}, "op", ProblemCredentials, false, "", errors.New("403"))
	tests := []struct {
		name  string
		errs  []error
		want  error
		calls int
	}{
		{"success", []error{nil}, nil, 1},
		{"two transient then success", []error{transient, transient, nil}, nil, 3},
		{"always transient: bounded", []error{transient, transient, transient, transient, transient, transient}, transient, 4},
		{"permanent: no retry", []error{permanent, nil}, permanent, 1},
	}
	fast := RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}.withDefaults()
	for _, tt := range tests {
		calls := 0
		err := fast.do(context.Background(), discard(), "op", time.Second, func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("%s: attempt without a deadline", tt.name)
			}
			calls++
			return tt.errs[calls-1]
		})
		if err != tt.want || calls != tt.calls {
			t.Errorf("%s: err %v after %d calls, want %v after %d", tt.name, err, calls, tt.want, tt.calls)
		}
	}
	// Cancellation stops the waiting.
	ctx, cancel := context.WithCancel(context.Background())
	slow := RetryPolicy{BaseDelay: time.Hour, MaxDelay: time.Hour}
	calls := 0
	go cancel()
	if err := slow.withDefaults().do(ctx, discard(), "op", 0, func(context.Context) error { calls++; return transient }); err == nil || calls != 1 {
		t.Errorf("cancelled retry: %v after %d calls", err, calls)
	}
}

func TestValidateKey(t *testing.T) {
	good := []string{"a", "work/work-20261122T031700Z-k3x9.tar.zst", ".director-check/x", "a b/#c", "ü/名"}
	bad := []string{"", "/a", "a/", "a//b", "..", "a/../b", "./a", `a\b`, "a\x00b", "a\nb", "\xff", strings.Repeat("a", 1025), "w/.director-put-x.tmp"}
	for _, k := range good {
		if err := ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v", k, err)
		}
	}
	for _, k := range bad {
		if err := ValidateKey(k); errcode.Of(err) != errcode.InvalidInput || !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, want invalid_input", k, err)
		}
	}
	for _, p := range []string{"", "a", "a/", "a/b", ".director-check/", ".", "a/."} {
		if err := validatePrefix(p); err != nil {
			t.Errorf("validatePrefix(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"/a", "a//", "../", "a/../"} {
		if err := validatePrefix(p); err == nil {
			t.Errorf("validatePrefix(%q) passed", p)
		}
	}
}

// TestFileStorePermissions: archives hold live credentials.
func TestFileStorePermissions(t *testing.T) {
	dir := t.TempDir() + "/store"
	s := mustOpen(t, "file://"+dir, Options{})
	put(t, s, "work/a.tar.zst", "secret")
	for p, want := range map[string]uint32{dir: 0o700, dir + "/work": 0o700, dir + "/work/a.tar.zst": 0o600} {
		fi, err := statMode(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi != want {
			t.Errorf("%s has mode %o, want %o", p, fi, want)
		}
	}
}

// A Put killed midway leaves its temporary file, invisible to List and so to
// every delete; the next Put or Delete in that folder removes it, but never
// the file of a Put still running (it holds the file's lock) or one created
// within tempGrace (whose Put may not hold its lock yet).
func TestFileStoreSweepsAbandonedTemps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir() + "/store"
	s := mustOpen(t, "file://"+dir, Options{})
	put(t, s, "work/a.tar.zst", "a")
	old := time.Now().Add(-2 * tempGrace)
	mk := func(name string, mtime time.Time) string {
		p := dir + "/work/" + name
		if err := os.WriteFile(p, []byte("half an archive"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hold := func(p string) *os.File { // as a running Put does
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if err := lockTemp(f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	abandoned := mk(tempPrefix+"0123456789abcdef.tmp", old)
	// Killed a moment ago: the sweep holds the folder's lock, so no Put
	// can be between creating and locking a file, and age does not matter.
	justKilled := mk(tempPrefix+"fedcba9876543210.tmp", time.Now())
	live := mk(tempPrefix+"00112233445566ff.tmp", old)
	liveFresh := mk(tempPrefix+"ffeeddccbbaa9988.tmp", time.Now())
	notOurs := mk("notes.tmp", old)
	lf := hold(live)
	hold(liveFresh)
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	put(t, s, "work/b.tar.zst", "b")
	if exists(abandoned) || exists(justKilled) {
		t.Errorf("Put left an abandoned temporary file (old %v, just killed %v)", exists(abandoned), exists(justKilled))
	}
	if !exists(live) || !exists(liveFresh) || !exists(notOurs) {
		t.Errorf("Put removed a temporary file in use, or a file not its own (live %v, live fresh %v, notes %v)", exists(live), exists(liveFresh), exists(notOurs))
	}

	// Once the Put holding it has gone, Delete sweeps it too.
	lf.Close()
	if err := s.Delete(ctx, "work/a.tar.zst"); err != nil {
		t.Fatal(err)
	}
	if exists(live) || !exists(liveFresh) {
		t.Errorf("after its Put died: live temp exists %v; the other live one %v", exists(live), exists(liveFresh))
	}
	objs, err := s.List(ctx, "work/")
	if err != nil || len(objs) != 2 || objs[0].Key != "work/b.tar.zst" || objs[1].Key != "work/notes.tmp" {
		t.Errorf("List after the sweeps: %+v, %v", objs, err)
	}
}

// Where folders cannot be locked, a sweep leaves young files alone: their
// Put may not have locked them yet.
func TestRemoveAbandonedWithoutAFolderLock(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	young, aged := filepath.Join(dir, tempPrefix+"young.tmp"), filepath.Join(dir, tempPrefix+"aged.tmp")
	for _, p := range []string{young, aged} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * tempGrace)
	if err := os.Chtimes(aged, past, past); err != nil {
		t.Fatal(err)
	}
	removeAbandoned(root, ".", tempGrace)
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a young temporary file was swept: %v", err)
	}
	if _, err := os.Stat(aged); err == nil {
		t.Errorf("an aged abandoned temporary file was kept")
	}
}

// Sweep clears a folder that holds nothing but a killed Put's file (a
// profile whose first snapshot was killed), and then the folder.
func TestFileStoreSweep(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir() + "/store"
	s := mustOpen(t, "file://"+dir, Options{})
	put(t, s, "other/x.tar.zst", "x")
	if err := os.MkdirAll(dir+"/work", 0o700); err != nil {
		t.Fatal(err)
	}
	tmp := dir + "/work/" + tempPrefix + "0123456789abcdef.tmp"
	if err := os.WriteFile(tmp, []byte("half an archive"), 0o600); err != nil {
		t.Fatal(err)
	}
	sw, ok := s.(Sweeper)
	if !ok {
		t.Fatal("the file store is not a Sweeper")
	}
	if err := sw.Sweep(ctx, "work"); err == nil {
		t.Error("Sweep of a prefix without its slash: no error")
	}
	if err := sw.Sweep(ctx, "work/"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir + "/work"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the emptied folder is still there: %v", err)
	}
	if objs, err := s.List(ctx, ""); err != nil || len(objs) != 1 {
		t.Errorf("Sweep touched another folder: %+v %v", objs, err)
	}
	if err := sw.Sweep(ctx, "nothing/"); err != nil {
		t.Errorf("Sweep of a missing folder: %v", err)
	}
}

func statMode(p string) (uint32, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	return uint32(fi.Mode().Perm()), nil
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

type wrapped struct{ Store }

func (w wrapped) Remote() bool { return IsRemote(w.Store) }

func TestIsRemoteThroughWrappers(t *testing.T) {
	local := mustOpen(t, "file://"+t.TempDir(), Options{})
	if IsRemote(local) || IsRemote(wrapped{local}) {
		t.Error("a file store counts as remote")
	}
	type opaque struct{ Store }
	if !IsRemote(opaque{local}) {
		t.Error("a store that cannot tell must count as remote")
	}
}

// TestBodyNeverCompletesAnOversizedUpload reads a body the way net/http
// sends one with a Content-Length: through io.LimitReader(body, size), so
// every read asks for at most what is left. The read that would hand out the
// last announced byte of a longer body must fail and hand out nothing, or the
// server would see a complete request (and may store it) before the
// transport notices the extra bytes.
func TestBodyNeverCompletesAnOversizedUpload(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    string
		size    int64
		chunk   int // the reader returns at most this many bytes per Read
		wantErr bool
	}{
		{"exact", "0123456789", 10, 3, false},
		{"exact, one read", "0123456789", 10, 100, false},
		{"longer", "0123456789abcdef", 10, 3, true},
		{"longer, one read", "0123456789abcdef", 10, 100, true},
		{"one byte more", "01234567890", 10, 10, true},
		{"shorter", "01234", 10, 3, true},
		{"empty, announced empty", "", 0, 1, false},
		{"one byte, announced empty", "x", 0, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBody(iotest.HalfReader(&chunkReader{r: strings.NewReader(tc.data), max: tc.chunk}), tc.size)
			var sent []byte
			buf := make([]byte, 64)
			// net/http limits reads to a Content-Length, except 0, which it
			// treats as unknown: it then reads the body to its end.
			lr := io.Reader(b)
			if tc.size > 0 {
				lr = io.LimitReader(b, tc.size)
			}
			var err error
			for {
				var n int
				n, err = lr.Read(buf)
				sent = append(sent, buf[:n]...)
				if err != nil {
					break
				}
			}
			if err == io.EOF {
				err = nil
			}
			if tc.wantErr {
				if !errors.Is(err, errSizeMismatch) {
					t.Fatalf("err = %v, want a size mismatch", err)
				}
				if int64(len(sent)) >= tc.size && tc.size > 0 {
					t.Errorf("handed out %d bytes of %d before failing: the request would be complete", len(sent), tc.size)
				}
				return
			}
			if err != nil || string(sent) != tc.data {
				t.Fatalf("sent %q, %v; want %q", sent, err, tc.data)
			}
		})
	}
}

// chunkReader returns at most max bytes per Read.
type chunkReader struct {
	r   io.Reader
	max int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.max {
		p = p[:c.max]
	}
	return c.r.Read(p)
}

// Puts racing sweeps in one folder all land: a sweep never takes a Put's
// file for abandoned, not even between its creation and its lock.
func TestFileStorePutsRaceSweeps(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, "file://"+t.TempDir(), Options{})
	sw := s.(Sweeper)
	stop := make(chan struct{})
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		for {
			select {
			case <-stop:
				return
			default:
				_ = sw.Sweep(ctx, "work/")
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if err := s.Put(ctx, fmt.Sprintf("work/w%d-%02d.tar.zst", w, i), strings.NewReader("data"), 4); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-swept
	close(errs)
	for err := range errs {
		t.Errorf("Put racing a sweep: %v", err)
	}
	if objs, err := s.List(ctx, "work/"); err != nil || len(objs) != 200 {
		t.Errorf("List: %d objects, %v; want 200", len(objs), err)
	}
}

// Location puts the key in the URL's path, before any query, for every
// backend.
func TestLocation(t *testing.T) {
	full := Options{AWSAccessKeyID: "k", AWSSecretAccessKey: "s", SupabaseURL: "https://abc.supabase.co", SupabaseServiceKey: "key"}
	const key = "work/work-20260101T000000Z-abcd.tar.zst.age"
	dir := t.TempDir()
	tests := []struct {
		url, want string
	}{
		{"file://" + dir, "file://" + dir + "/" + key},
		{"s3://bucket", "s3://bucket/" + key},
		{"s3://bucket/pfx?endpoint=127.0.0.1:19000&insecure=true", "s3://bucket/pfx/" + key + "?endpoint=127.0.0.1:19000&insecure=true"},
		{"s3://bucket/a/b?region=eu-west-1", "s3://bucket/a/b/" + key + "?region=eu-west-1"},
		{"s3://profiles/team?endpoint=https://abc.supabase.co/storage/v1/s3&region=eu-west-2",
			"s3://profiles/team/" + key + "?endpoint=abc.supabase.co/storage/v1/s3&region=eu-west-2"},
		{"supabase://mine/p", "supabase://mine/p/" + key},
		{"supabase://mine", "supabase://mine/" + key},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			s, err := Open(context.Background(), tt.url, full)
			if err != nil {
				t.Fatal(err)
			}
			if got := Location(s, key); got != tt.want {
				t.Errorf("Location = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBadStoreURLsHideCredentials: a store URL that is refused is quoted in
// the error, which reaches stderr, --json output and logs; credentials
// written into it by mistake never are: a user:password@ part of the URL
// or of its endpoint parameter (escaped or not), the values of unknown
// parameters (?secret_key=…), and url.Parse's own error, which quotes the
// whole URL.
// A query that does not read as name=value pairs fails: url.URL.Query
// dropped the bad part, and the store went to AWS (over plain http with
// insecure=true) instead of the endpoint the URL named.
func TestStoreURLQueryThatDoesNotRead(t *testing.T) {
	for _, rawURL := range []string{
		"s3://bucket/pfx?endpoint=127.0.0.1:9000;insecure=true",
		"s3://bucket/pfx?insecure=true&endpoint=127.0.0.1:9000;",
		"s3://bucket/pfx?endpoint=127.0.0.1:9000%",
		"s3://bucket/pfx?endpoint=127.0.0.1:9000&region=eu%zz",
	} {
		t.Run(rawURL, func(t *testing.T) {
			st, err := Open(context.Background(), rawURL, Options{AWSAccessKeyID: "a", AWSSecretAccessKey: "b"})
			if errcode.Of(err) != errcode.InvalidInput || !strings.Contains(err.Error(), "name=value") {
				t.Fatalf("Open = %v, %v: want invalid_input about the parameters", st, err)
			}
		})
	}
}

func TestBadStoreURLsHideCredentials(t *testing.T) {
	const secret = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
	// AWS secret keys hold "/" and "+": AWS's own example key does.
	const slashed = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	opts := Options{AWSAccessKeyID: "AKID", AWSSecretAccessKey: "x", SupabaseURL: "https://p.supabase.co", SupabaseServiceKey: "k"}
	for _, rawURL := range []string{
		"s3://AKID:" + slashed + "@bucket/pfx",
		"s3://bucket/pfx?endpoint=AKID:" + slashed + "@127.0.0.1:9000",
		"s3://bucket/pfx?endpoint=https://AKID:" + slashed + "@minio.example.com/s3",
		"s3://bucket/pfx?endpoint=https://AKID:" + slashed + "%40minio.example.com",
		"supabase://svc:" + slashed + "@bucket/pfx",
		"s3://AKID:" + secret + "@bucket/pfx",
		"s3://bucket/pfx?endpoint=AKID:" + secret + "@127.0.0.1:9000",
		"s3://bucket/pfx?endpoint=https://AKID:" + secret + "@minio.example.com",
		"s3://bucket/pfx?endpoint=https://AKID:" + secret + "%40minio.example.com",
		"s3://bucket/pfx?endpoint=127.0.0.1:9000&secret_key=" + secret,
		"s3://bucket/pfx?access_key=AKID&secret=" + secret + "&insecure=true",
		"s3://AKID:" + secret + "%zz@bucket/pfx",
		"supabase://bucket/pfx?key=" + secret,
		"supabase://svc:" + secret + "@bucket/pfx",
		"supabase://svc:" + secret + "%zz@bucket/pfx",
		"file:///tmp/x?secret=" + secret,
		// A secret may hold "?" and "&" too (MinIO and versitygw take
		// any): the URL is not to be split at them before the "@".
		"s3://AKID:wJalrXUtnF?EMIK7MDENG@bucket/pfx?endpoint=127.0.0.1:9000&insecure=true",
		"s3://bucket/pfx?endpoint=http://AKID:wJalrXUtnF&EMIK7MDENG@127.0.0.1:9000",
		"s3://AKID:wJalrXUtnF/EMI@bucket/p?endpoint=http://AKID:K7MDENG&EXAMPLEKEY@127.0.0.1:9000",
		"supabase://svc:wJalrXUtnF?EMIK7MDENG@bucket/pfx",
		"file://svc:" + secret + "@/tmp/x",
		// A query value holding an "@" (or %40) is not a user:password
		// part before a host: its tail is secret too.
		"s3://bucket/pfx?secret_key=wJalrXUtnF@EMIK7MDENG",
		"s3://bucket/pfx?endpoint=127.0.0.1:9000&secret_key=wJalrXUtnF@EXAMPLEKEY",
		"s3://bucket/pfx?secret_key=wJalrXUtnF%40EXAMPLEKEY&region=eu",
		"supabase://bucket/pfx?key=wJalrXUtnF@EXAMPLEKEY",
		// Bytes that are not UTF-8 before a %40: lower-casing them made
		// positions that did not fit the URL, and a panic.
		"s3://\xff\xff\xffK7MDENG%40",
		"supabase://b\xff\xffK7MDENG%40x",
	} {
		t.Run(rawURL, func(t *testing.T) {
			_, err := Open(context.Background(), rawURL, opts)
			if errcode.Of(err) != errcode.InvalidInput {
				t.Fatalf("Open = %v [%s], want invalid_input", err, errcode.Of(err))
			}
			shown := err.Error() + errcode.HintOf(err)
			if strings.Contains(shown, "wJalrXUtnFEMI") || strings.Contains(shown, "K7MDENG") || strings.Contains(shown, "EXAMPLEKEY") {
				t.Errorf("the error shows the secret: %v (hint %q)", err, errcode.HintOf(err))
			}
		})
	}
}

// The store check's own hint never sends the user to the store check.
func TestDiagnoseNeverSuggestsStoreCheck(t *testing.T) {
	for _, err := range []error{
		fail(&fileStore{dir: "/x"}, "put", "", false, "", errors.New("boom")),
		errcode.New(errcode.StorageUnavailable, "odd").WithHint("retry; if it keeps failing run: `director store check`"),
	} {
		if _, d, hint := diagnose(err); strings.Contains(hint, "store check") || d == "" {
			t.Errorf("diagnose(%v) = %q, %q", err, d, hint)
		}
	}
}

// TestNetworkFS: a file store's folder counts as leaving the machine when
// the mount holding it (the longest mount point above it) is a network
// file system; mount points with escaped spaces are read as mountinfo
// writes them.
func TestNetworkFS(t *testing.T) {
	const mountinfo = `22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 27 0:50 / /mnt/nas rw,relatime shared:20 - nfs4 nas:/export rw,vers=4.2
41 40 8:17 / /mnt/nas/local rw,relatime - ext4 /dev/sdb1 rw
42 27 0:51 / /home/me/remote\040box rw,nosuid - fuse.sshfs me@box:/ rw,user_id=1000
43 27 0:52 / /media/usb rw,nosuid - fuseblk /dev/sdc1 rw
44 27 0:53 / /srv/share rw - cifs //srv/share rw
`
	for _, c := range []struct{ path, want string }{
		{"/home/me/.director/snapshots", ""},
		{"/mnt/nas", "nfs4"},
		{"/mnt/nas/director/snapshots", "nfs4"},
		{"/mnt/nas/local/snapshots", ""},
		{"/mnt/nasty/snapshots", ""},
		{"/home/me/remote box/snapshots", "fuse.sshfs"},
		{"/media/usb/snapshots", ""},
		{"/srv/share/x", "cifs"},
	} {
		if got := networkFSIn(mountinfo, c.path); got != c.want {
			t.Errorf("%s: %q, want %q", c.path, got, c.want)
		}
		if mnt, _ := networkMountIn(mountinfo, c.path); (mnt != "") != (c.want != "") || mnt != "" && !within(c.path, mnt) {
			t.Errorf("%s: mount %q", c.path, mnt)
		}
	}
}

// TestLocalFileStoreIsNotRemote: a file store in a temp folder (a local
// disk or tmpfs here) takes plaintext archives.
func TestLocalFileStoreIsNotRemote(t *testing.T) {
	st, err := Open(context.Background(), "file://"+t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if IsRemote(st) {
		t.Fatalf("a local folder counts as remote (%s)", st.(interface{ NetworkFS() string }).NetworkFS())
	}
}

// FuzzOpen: no store URL, however malformed, panics Open or the redaction
// of its errors, and a refused one is invalid_input. (Open dials nothing.)
func FuzzOpen(f *testing.F) {
	for _, seed := range []string{
		"file:///tmp/x", "file://relative/x", "s3://bucket/pfx?endpoint=127.0.0.1:9000&insecure=true",
		"s3://AKID:secret@bucket/pfx", "supabase://svc:k@bucket/pfx?key=x", "s3://\xff\xff\xff%40",
		"s3://bucket/pfx?secret_key=a%40b&region=eu", "file://localhost/x", "ftp://x",
	} {
		f.Add(seed)
	}
	opts := Options{AWSAccessKeyID: "AKID", AWSSecretAccessKey: "x", SupabaseURL: "https://p.supabase.co", SupabaseServiceKey: "k"}
	f.Fuzz(func(t *testing.T, rawURL string) {
		st, err := Open(context.Background(), rawURL, opts)
		if err != nil {
			if c := errcode.Of(err); c != errcode.InvalidInput {
				t.Fatalf("Open(%q) = %v [%s], want invalid_input", rawURL, err, c)
			}
			return
		}
		_ = st.String()
		_ = ID(st)
	})
}

// TestOpenDirTakesAnyName: OpenDir opens a folder whose name a file:// URL
// cannot carry ("?", "#", "%"), which the default store of such a home
// needs; the catalog names it without a query to strip, and a plain
// folder's name is what it always was. Open's file:// parsing is unchanged.
func TestOpenDirTakesAnyName(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		folder string
		id     string // the catalog name after the temp dir's path
	}{
		{"plain", "snapshots", "/snapshots"},
		{"question mark", "d?x=1", "/d%3Fx=1"},
		{"secret-looking query", "d?token=1", "/d%3Ftoken=1"},
		{"hash", "d#frag", "/d%23frag"},
		{"percent", "d%41", "/d%41"},
		{"percent and question mark", "d%41?x", "/d%2541%3Fx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, tt.folder)
			st, err := OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Put(ctx, "p/a.tar.zst", strings.NewReader("abc"), 3); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "p", "a.tar.zst")); err != nil {
				t.Fatalf("the object is not in %s: %v", dir, err)
			}
			rc, _, err := st.Get(ctx, "p/a.tar.zst")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			if string(b) != "abc" {
				t.Errorf("got %q", b)
			}
			if got, want := st.String(), "file://"+filepath.ToSlash(dir); got != want {
				t.Errorf("String() = %q, want %q", got, want)
			}
			if got, want := ID(st), "file://"+filepath.ToSlash(base)+tt.id; got != want {
				t.Errorf("ID() = %q, want %q", got, want)
			}
			if strings.ContainsAny(tt.folder, "?#") {
				if _, err := Open(ctx, "file://"+dir, Options{}); errcode.Of(err) != errcode.InvalidInput {
					t.Errorf("Open of the file:// URL = %v, want invalid_input as before", err)
				}
			}
		})
	}
}

// TestResolveWith: symlinks on a path are followed, also a dangling one
// and a chain, and nothing is read past a path stop names (a folder on a
// network mount): the path then stays as given.
func TestResolveWith(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "real", "snapshots"), 0o700))
	must(os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "home")))
	must(os.Symlink("home", filepath.Join(dir, "chain")))
	must(os.Symlink(filepath.Join(dir, "gone", "snapshots"), filepath.Join(dir, "real", "usb")))
	for _, c := range []struct {
		path, want string
		stop       string // a path stop names, "" for none
	}{
		{filepath.Join(dir, "home", "snapshots"), filepath.Join(dir, "real", "snapshots"), ""},
		{filepath.Join(dir, "chain", "snapshots"), filepath.Join(dir, "real", "snapshots"), ""},
		{filepath.Join(dir, "home", "usb", "x"), filepath.Join(dir, "gone", "snapshots", "x"), ""},
		{filepath.Join(dir, "home", "missing", "x"), filepath.Join(dir, "real", "missing", "x"), ""},
		{filepath.Join(dir, "home", "snapshots"), filepath.Join(dir, "home", "snapshots"), filepath.Join(dir, "home")},
	} {
		var read []string
		stop := func(p string) bool {
			read = append(read, p)
			return c.stop != "" && p == c.stop
		}
		if got := resolveWith(c.path, stop); got != c.want {
			t.Errorf("resolveWith(%s) = %s, want %s", c.path, got, c.want)
		}
		if c.stop != "" && slices.Contains(read[:len(read)-1], c.stop) {
			t.Errorf("%s was read past the stop: %v", c.path, read)
		}
	}
}

// TestRedact: what errors, logs and pasted hints show of a store URL. A
// user:password@ part goes wherever it is typed, also with a "/" in the
// secret; a file:// path may hold an "@", which is a folder's name, not a
// credential.
func TestRedact(t *testing.T) {
	tests := []struct{ url, want string }{
		{"s3://AKID:secret@bucket/pfx", "s3://REDACTED@bucket/pfx"},
		{"s3://AKID:se/cret@bucket/pfx", "s3://REDACTED@bucket/pfx"},
		{"supabase://svc:k@bucket", "supabase://REDACTED@bucket"},
		{"s3://b/p?endpoint=https://k:s@h:9000&region=eu", "s3://b/p?endpoint=https://REDACTED@h:9000&region=eu"},
		{"s3://b/p?secret_key=x", "s3://b/p?secret_key=REDACTED"},
		{"file:///srv/snaps@nas/x", "file:///srv/snaps@nas/x"},
		{"file://user@localhost/srv/x", "file://REDACTED@localhost/srv/x"},
		// A password holding a "/": openFile refuses these as credentials.
		{"file://AKIA:se/cret@/srv/x", "file://REDACTED@/srv/x"},
		{"file://AKIA:se/cret%40/srv/x", "file://REDACTED@/srv/x"},
		{"file://backups/me@work", "file://backups/me@work"},
		{"file:///srv/x?token=1", "file:///srv/x?token=REDACTED"},
		{"file:///srv/x", "file:///srv/x"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			if got := Redact(tt.url); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.url, got, tt.want)
			}
		})
	}
}
