package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"director/errcode"
)

// These tests run the supabase backend against the protocol double of
// supabase_double_test.go (no Supabase Storage server can run here).

func TestSupabaseCreatesPrivateBucketWhenMissing(t *testing.T) {
	d := newSupabaseDouble(t)
	s := mustOpen(t, "supabase://", d.opts())
	put(t, s, "a", "x")
	d.mu.Lock()
	ok := d.buckets[DefaultSupabaseBucket]
	d.mu.Unlock()
	if !ok {
		t.Fatalf("bucket %s was not created", DefaultSupabaseBucket)
	}
	// A second store sees the bucket and does not create it again.
	n := len(d.requestLog())
	put(t, mustOpen(t, "supabase://", d.opts()), "b", "x")
	if reqs := d.requestLog()[n:]; slices.Contains(reqs, "POST /storage/v1/bucket") {
		t.Errorf("bucket created again: %q", reqs)
	}
}

// TestSupabaseReadsNeverCreateTheBucket: only an upload creates a missing
// bucket. A restore, listing, stat or delete through a misspelt bucket name
// fails with missing_bucket and a hint to check the name, and creates
// nothing: it used to create an empty bucket and report no snapshots.
func TestSupabaseReadsNeverCreateTheBucket(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		call func(s Store) error
	}{
		{"list", func(s Store) error { _, err := s.List(ctx, "work/"); return err }},
		{"stat", func(s Store) error { _, err := s.Stat(ctx, "work/a.tar.zst"); return err }},
		{"get", func(s Store) error { _, _, err := s.Get(ctx, "work/a.tar.zst"); return err }},
		{"delete", func(s Store) error { return s.Delete(ctx, "work/a.tar.zst") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newSupabaseDouble(t)
			put(t, mustOpen(t, "supabase://browser-profiles", d.opts()), "work/a.tar.zst", "x")
			err := tt.call(mustOpen(t, "supabase://browser-profils", d.opts()))
			if errcode.Of(err) != errcode.StorageUnavailable || ProblemOf(err) != ProblemNoBucket ||
				!strings.Contains(errcode.HintOf(err), `bucket "browser-profils" does not exist`) || !strings.Contains(errcode.HintOf(err), "`director store check`") {
				t.Fatalf("err = %v [%s, %s] (hint %q), want storage_unavailable, missing_bucket, naming the bucket", err, errcode.Of(err), ProblemOf(err), errcode.HintOf(err))
			}
			d.mu.Lock()
			created := d.buckets["browser-profils"]
			d.mu.Unlock()
			if created {
				t.Errorf("%s created the misspelt bucket", tt.name)
			}
		})
	}
}

func TestSupabaseEscapesPaths(t *testing.T) {
	d := newSupabaseDouble(t)
	s := mustOpen(t, "supabase://snaps/team one", d.opts())
	key := "work/a b?c&d+e=f;g.tar.zst"
	put(t, s, key, "data")
	if got := get(t, s, key); got != "data" {
		t.Fatalf("Get = %q", got)
	}
	if names := d.names("snaps"); !slices.Equal(names, []string{"team one/" + key}) {
		t.Errorf("stored names %q", names)
	}
	want := "POST /storage/v1/object/snaps/team%20one/work/a%20b%3Fc&d+e=f%3Bg.tar.zst"
	if reqs := d.requestLog(); !slices.Contains(reqs, want) {
		t.Errorf("no request %q among %q", want, reqs)
	}
	// "//" is refused before any request, never collapsed as storage-go does.
	n := len(d.requestLog())
	err := s.Put(context.Background(), "work//double.tar.zst", strings.NewReader("x"), 1)
	if errcode.Of(err) != errcode.InvalidInput {
		t.Errorf("Put with // = %v, want invalid_input", err)
	}
	if reqs := d.requestLog(); len(reqs) != n {
		t.Errorf("a request was sent for an invalid key: %q", reqs[n:])
	}
}

// TestSupabaseRefusedCharacters: Supabase Storage answers an upload whose
// object name holds # % [ ] { } ^ ` " < > \ | ~ or a control character with
// 400 InvalidKey (isValidKey in supabase/storage's src/storage/limits.ts;
// the double does the same). A store URL whose bucket or prefix holds one
// is invalid_input when opened, and such a key is invalid_input before any
// request: not storage_unavailable on every upload.
func TestSupabaseRefusedCharacters(t *testing.T) {
	d := newSupabaseDouble(t)
	for _, rawURL := range []string{
		"supabase://snaps/50%25off",
		"supabase://snaps/team~1",
		"supabase://snaps/a/b[1]",
		"supabase://sn~aps",
	} {
		t.Run(rawURL, func(t *testing.T) {
			_, err := Open(context.Background(), rawURL, d.opts())
			if errcode.Of(err) != errcode.InvalidInput || !strings.Contains(err.Error(), "Supabase Storage refuses") {
				t.Fatalf("Open = %v [%s], want invalid_input saying what Supabase refuses", err, errcode.Of(err))
			}
		})
	}
	s := mustOpen(t, "supabase://snaps/team one", d.opts())
	n := len(d.requestLog())
	for _, key := range []string{"work/a#b.tar.zst", "work/100%.tar.zst", "work/a|b"} {
		err := s.Put(context.Background(), key, strings.NewReader("x"), 1)
		if errcode.Of(err) != errcode.InvalidInput || errcode.HintOf(err) == "" {
			t.Errorf("Put(%q) = %v [%s], want invalid_input with a hint", key, err, errcode.Of(err))
		}
	}
	if reqs := d.requestLog(); len(reqs) != n {
		t.Errorf("requests sent for refused keys: %q", reqs[n:])
	}
}

// TestSupabaseUploadLimit: an upload over the project's (or bucket's) size
// limit is refused with {"statusCode":"413","error":"Payload too large",
// "message":"The object exceeded the maximum allowed size"}, with HTTP 413
// or, from older servers, HTTP 400. Known size or streamed, the error says
// to raise the limit (a rerun would fail the same way), is not retried, and
// leaves no object.
func TestSupabaseUploadLimit(t *testing.T) {
	const limit = 1 << 20
	data := bytes.Repeat([]byte("0123456789abcdef"), 4*limit/16)
	for _, legacy := range []bool{false, true} {
		for _, size := range []int64{int64(len(data)), -1} {
			t.Run(fmt.Sprintf("legacy=%v size=%d", legacy, size), func(t *testing.T) {
				d := newSupabaseDouble(t)
				d.legacy, d.maxUpload = legacy, limit
				s := mustOpen(t, "supabase://", d.opts())
				var r io.Reader = bytes.NewReader(data)
				if size < 0 {
					r = io.MultiReader(r) // not replayable
				}
				n := len(d.requestLog())
				err := s.Put(context.Background(), "work/big.tar.zst", r, size)
				if errcode.Of(err) != errcode.StorageUnavailable || !strings.Contains(errcode.HintOf(err), "upload limit") {
					t.Fatalf("Put = %v [%s] (hint %q), want storage_unavailable naming the upload limit", err, errcode.Of(err), errcode.HintOf(err))
				}
				uploads := 0
				for _, req := range d.requestLog()[n:] {
					if strings.HasPrefix(req, "POST /storage/v1/object/browser-profiles/") {
						uploads++
					}
				}
				if uploads != 1 {
					t.Errorf("%d uploads, want 1 (a refusal for size is not retried)", uploads)
				}
				if names := d.names(DefaultSupabaseBucket); len(names) != 0 {
					t.Errorf("objects left: %q", names)
				}
			})
		}
	}
}

// TestSupabaseLegacyErrorStatuses: older servers answer errors with HTTP
// 400 and the real status in the body's statusCode; the codes still follow
// the real status.
func TestSupabaseLegacyErrorStatuses(t *testing.T) {
	d := newSupabaseDouble(t)
	d.legacy = true
	s := mustOpen(t, "supabase://legacy", d.opts())
	ctx := context.Background()
	put(t, s, "k", "v")
	if err := s.Put(ctx, "k", bytes.NewReader([]byte("w")), 1); !errors.Is(err, ErrExists) {
		t.Errorf("second Put = %v, want ErrExists", err)
	}
	if _, _, err := s.Get(ctx, "missing"); errcode.Of(err) != errcode.SnapshotNotFound {
		t.Errorf("Get of a missing key = %v, want snapshot_not_found", err)
	}
	if _, err := s.Stat(ctx, "missing"); errcode.Of(err) != errcode.SnapshotNotFound {
		t.Errorf("Stat of a missing key = %v, want snapshot_not_found", err)
	}
}

func TestSupabaseErrors(t *testing.T) {
	d := newSupabaseDouble(t)
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String()
	}()
	badKey := d.opts()
	badKey.SupabaseServiceKey = "anon-key"
	down := d.opts()
	down.SupabaseURL = closed
	tests := []struct {
		name    string
		opts    Options
		want    Problem
		hintHas string
	}{
		{"wrong key", badKey, ProblemCredentials, "SUPABASE_SERVICE_KEY"},
		{"unreachable", down, ProblemUnreachable, "SUPABASE_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Check(context.Background(), mustOpen(t, "supabase://", tt.opts))
			if rep.OK || rep.Problem != tt.want || !strings.Contains(rep.Hint, tt.hintHas) {
				t.Fatalf("Check = %+v, want %s with %q in the hint", rep, tt.want, tt.hintHas)
			}
			if errcode.Of(rep.Err()) != errcode.StorageUnavailable {
				t.Errorf("Err() = %v", rep.Err())
			}
		})
	}
}

func TestSupabaseRetries(t *testing.T) {
	method := func(m string) func(*http.Request) bool {
		return func(r *http.Request) bool { return r.Method == m && strings.Contains(r.URL.Path, "/object/") }
	}
	tests := []struct {
		name      string
		fails     int64
		match     func(*http.Request) bool
		call      func(s Store) error
		wantErr   bool
		wantCalls int64
	}{
		{"stat recovers after two 503s", 2, method(http.MethodHead), func(s Store) error { _, err := s.Stat(context.Background(), "obj"); return err }, false, 3},
		{"stat gives up after 4 attempts", -1, method(http.MethodHead), func(s Store) error { _, err := s.Stat(context.Background(), "obj"); return err }, true, 4},
		{"get recovers", 2, method(http.MethodGet), func(s Store) error { _, _, err := s.Get(context.Background(), "obj"); return err }, false, 3},
		{"list recovers", 2, func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/object/list/") }, func(s Store) error { _, err := s.List(context.Background(), ""); return err }, false, 3},
		{"delete recovers", 2, method(http.MethodDelete), func(s Store) error { return s.Delete(context.Background(), "gone") }, false, 3},
		{"seekable put recovers", 2, method(http.MethodPost), func(s Store) error {
			return s.Put(context.Background(), "seekable", bytes.NewReader([]byte("replayable")), 10)
		}, false, 3},
		{"streamed put is not replayed", 2, method(http.MethodPost), func(s Store) error {
			return s.Put(context.Background(), "streamed", io.MultiReader(strings.NewReader("one-shot")), -1)
		}, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newSupabaseDouble(t)
			s := mustOpen(t, "supabase://", d.opts())
			put(t, s, "obj", "content")
			var seen atomic.Int64
			d.mu.Lock()
			d.fail = func(r *http.Request) int {
				if !tt.match(r) {
					return 0
				}
				if n := seen.Add(1); tt.fails < 0 || n <= tt.fails {
					return http.StatusServiceUnavailable
				}
				return 0
			}
			d.mu.Unlock()
			err := tt.call(s)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				if errcode.Of(err) != errcode.StorageUnavailable || errcode.HintOf(err) == "" {
					t.Errorf("err = %v (hint %q), want storage_unavailable with a hint", err, errcode.HintOf(err))
				}
				if strings.Contains(tt.name, "put") && !strings.Contains(errcode.HintOf(err), "again") {
					t.Errorf("hint %q of a failed upload does not say to run again", errcode.HintOf(err))
				}
			}
			if got := seen.Load(); got != tt.wantCalls {
				t.Errorf("%d matching requests, want %d", got, tt.wantCalls)
			}
			if names := d.names(DefaultSupabaseBucket); slices.Contains(names, "streamed") {
				t.Errorf("a failed Put left its object: %q", names)
			}
		})
	}
}

// TestStoreIDNamesTheSupabaseProject: a supabase:// URL names a bucket and a
// prefix, the project comes from SUPABASE_URL, so the catalog's name for the
// store (ID) must add the project, or two projects' "browser-profiles"
// buckets would share catalog rows.
func TestStoreIDNamesTheSupabaseProject(t *testing.T) {
	opts := func(project string) Options {
		return Options{SupabaseURL: project, SupabaseServiceKey: "service-role-key"}
	}
	a := mustOpen(t, "supabase://profiles/team", opts("https://aaaa.supabase.co"))
	b := mustOpen(t, "supabase://profiles/team", opts("https://bbbb.supabase.co/"))
	if a.String() != b.String() {
		t.Fatalf("String() differs: %q %q", a, b)
	}
	for _, tc := range []struct {
		s    Store
		want string
	}{
		{a, "supabase://profiles/team?project=aaaa.supabase.co"},
		{b, "supabase://profiles/team?project=bbbb.supabase.co"},
	} {
		if got := ID(tc.s); got != tc.want {
			t.Errorf("ID = %q, want %q", got, tc.want)
		}
		if strings.Contains(ID(tc.s), "service-role-key") {
			t.Errorf("ID leaks the key: %q", ID(tc.s))
		}
	}
	f := mustOpen(t, "file://"+t.TempDir(), Options{})
	if ID(f) != f.String() {
		t.Errorf("file store: ID %q, String %q", ID(f), f.String())
	}
}

// TestSupabaseListPagesPastTheServerCap: the list endpoint returns at most
// 100 entries unless asked for more, and never more than 1500 (see the
// double's list), so a folder of 3,100 snapshot objects takes several
// calls; List must return them all, from the root and from the folder, as
// prune and catalog rebuild need every manifest.
func TestSupabaseListPagesPastTheServerCap(t *testing.T) {
	const n = 3100
	d := newSupabaseDouble(t)
	d.seed(DefaultSupabaseBucket, "work", n)
	s := mustOpen(t, "supabase://", d.opts())
	for _, prefix := range []string{"", "work/"} {
		objs, err := s.List(context.Background(), prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		if len(objs) != n {
			t.Fatalf("List(%q) = %d objects, want %d", prefix, len(objs), n)
		}
		for i, o := range objs {
			if want := fmt.Sprintf("work/work-%05d", i); o.Key != want || o.Size != 1 {
				t.Fatalf("List(%q)[%d] = %+v, want %s of 1 byte", prefix, i, o, want)
			}
		}
	}
}

// TestSupabaseCheckSaysItCreatedTheBucket: a store check's upload creates a
// missing bucket, as every first upload does; the report names it, so a
// misspelt bucket does not pass the check unnoticed. A check of an existing
// bucket reports no creation.
func TestSupabaseCheckSaysItCreatedTheBucket(t *testing.T) {
	d := newSupabaseDouble(t)
	put(t, mustOpen(t, "supabase://browser-profiles", d.opts()), "work/a.tar.zst", "x")
	for _, tt := range []struct{ url, want string }{
		{"supabase://browser-profiles", ""},
		{"supabase://browser-profils", "browser-profils"},
	} {
		rep := Check(context.Background(), mustOpen(t, tt.url, d.opts()))
		if !rep.OK || rep.CreatedBucket != tt.want {
			t.Errorf("check of %s: ok %v, created %q; want ok, created %q", tt.url, rep.OK, rep.CreatedBucket, tt.want)
		}
	}
}

// TestSupabaseListSurvivesDeletesBetweenPages: the list endpoint pages by
// offset, so objects deleted before the listing's position (by a prune on
// another machine) move the rest of the folder left, and a plain next
// offset would step over as many objects as were deleted. The listing must
// still return every object that was there from start to end, once.
func TestSupabaseListSurvivesDeletesBetweenPages(t *testing.T) {
	const n = 3100
	for _, tt := range []struct {
		name       string
		beforeCall int // the list call before which the objects go
		from, to   int // work-<from> up to, not including, work-<to>
	}{
		{"a few from the first page", 2, 10, 60},
		{"more than the overlap", 2, 100, 400},
		{"the whole first page", 2, 0, 1000},
		{"two pages' worth", 2, 0, 2000},
		{"from the second page, before the third call", 3, 1200, 1700},
		{"after the position: nothing is skipped either way", 2, 2500, 2600},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newSupabaseDouble(t)
			d.seed(DefaultSupabaseBucket, "work", n)
			calls := 0
			d.fail = func(r *http.Request) int {
				if !strings.Contains(r.URL.Path, "/object/list/") {
					return 0
				}
				calls++
				if calls == tt.beforeCall {
					d.mu.Lock()
					for i := tt.from; i < tt.to; i++ {
						delete(d.objects[DefaultSupabaseBucket], fmt.Sprintf("work/work-%05d", i))
					}
					d.mu.Unlock()
				}
				return 0
			}
			s := mustOpen(t, "supabase://", d.opts())
			objs, err := s.List(context.Background(), "work/")
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string]int{}
			for _, o := range objs {
				listed[o.Key]++
			}
			missing := 0
			for i := range n {
				key := fmt.Sprintf("work/work-%05d", i)
				stayed := i < tt.from || i >= tt.to
				switch c := listed[key]; {
				case c > 1:
					t.Errorf("%s listed %d times", key, c)
				case c == 0 && stayed:
					missing++
				}
			}
			if missing > 0 {
				t.Fatalf("%d of the objects that stayed were not listed (listed %d)", missing, len(objs))
			}
		})
	}
}

// TestSupabaseListFolderAndObjectOfOneName: "work/x" can be an object and
// the folder of "work/x/y" at once; the listing returns them as two
// entries named "x", and both objects are listed.
func TestSupabaseListFolderAndObjectOfOneName(t *testing.T) {
	d := newSupabaseDouble(t)
	s := mustOpen(t, "supabase://", d.opts())
	for _, k := range []string{"work/x", "work/x/y", "work/z"} {
		put(t, s, k, "x")
	}
	objs, err := s.List(context.Background(), "work/")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Key)
	}
	if want := []string{"work/x", "work/x/y", "work/z"}; !slices.Equal(got, want) {
		t.Fatalf("listed %q, want %q", got, want)
	}
}

// TestSupabaseListThatDoesNotAdvance: a service that ignores the list
// call's offset returns the first page again and again; the listing fails
// with storage_unavailable instead of looping forever.
func TestSupabaseListThatDoesNotAdvance(t *testing.T) {
	d := newSupabaseDouble(t)
	d.seed(DefaultSupabaseBucket, "work", 2500)
	d.ignoreOffset = true
	s := mustOpen(t, "supabase://", d.opts())
	_, err := s.List(context.Background(), "work/")
	if errcode.Of(err) != errcode.StorageUnavailable || !strings.Contains(err.Error(), "does not advance") {
		t.Fatalf("List = %v, want storage_unavailable: does not advance", err)
	}
}

// TestSupabaseListBounds: a listing walks at most maxListDepth folders
// below where it starts, and reads at most maxListPageBytes of one page's
// JSON, so that a broken or hostile server can neither keep it walking nor
// grow its memory; within the depth it lists what is there.
func TestSupabaseListBounds(t *testing.T) {
	d := newSupabaseDouble(t)
	deep := func(levels int) string {
		return "work/" + strings.Repeat("a/", levels) + "x"
	}
	d.seed(DefaultSupabaseBucket, "work", 1)
	d.mu.Lock()
	for _, key := range []string{deep(maxListDepth - 2), deep(maxListDepth + 5)} {
		d.seq++
		d.objects[DefaultSupabaseBucket][key] = &supaObject{file: filepath.Join(d.dir, "seed"), size: 1, modified: time.Now().UTC(), id: fmt.Sprintf("00000000-0000-4000-8000-%012d", d.seq)}
	}
	d.mu.Unlock()
	s := mustOpen(t, "supabase://", d.opts())
	_, err := s.List(context.Background(), "work/")
	if errcode.Of(err) != errcode.StorageUnavailable || !strings.Contains(err.Error(), fmt.Sprintf("nests folders more than %d deep", maxListDepth)) {
		t.Fatalf("List of a folder nested %d deep = %v, want the depth refused", maxListDepth+5, err)
	}
	d.mu.Lock()
	delete(d.objects[DefaultSupabaseBucket], deep(maxListDepth+5))
	d.mu.Unlock()
	objs, err := s.List(context.Background(), "work/")
	if err != nil || len(objs) != 2 {
		t.Fatalf("List within the depth = %v, %v; want 2 objects", objs, err)
	}

	// A page larger than the bound: a server streaming an endless array.
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "/object/list/") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"director-snapshots","name":"director-snapshots","public":false}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[`)
		entry := `{"name":"` + strings.Repeat("n", 1000) + `","id":null},`
		for range maxListPageBytes/len(entry) + 10 {
			if _, err := fmt.Fprint(w, entry); err != nil {
				return
			}
		}
		fmt.Fprint(w, `{"name":"end","id":null}]`)
	}))
	defer huge.Close()
	o := d.opts()
	o.SupabaseURL = huge.URL
	_, err = mustOpen(t, "supabase://", o).List(context.Background(), "work/")
	if errcode.Of(err) != errcode.StorageUnavailable || !strings.Contains(err.Error(), "decoding the listing") {
		t.Fatalf("List of a page over %d bytes = %v, want it refused", maxListPageBytes, err)
	}
}
