package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	storage_go "github.com/supabase-community/storage-go"

	"director/errcode"
)

// supabaseStore keeps objects in a Supabase Storage bucket through its REST
// API (https://supabase.github.io/storage/), authenticated with the service
// key sent both as "Authorization: Bearer" and as "apikey".
//
// It speaks the protocol with net/http and uses supabase-community/storage-go
// v0.8.1 only for its wire types (Bucket, FileObject, ListFileRequestBody,
// SortBy), because none of that client's calls is sound here:
//
//   - no call takes a context.Context, so none can have a deadline or be
//     cancelled (this includes GetBucket, CreateBucket and ListFiles, which
//     are otherwise simple);
//   - its errors drop the HTTP status (StorageError reads "status", the
//     server sends "statusCode" as a string), so 404, 401 and 5xx cannot be
//     told apart and nothing can be retried safely;
//   - DownloadFile reads the whole object into memory;
//   - upload options (x-upsert, content-type) are written into the client's
//     shared headers, so they leak into later calls and the client is not
//     safe for concurrent use;
//   - object paths are not URL-escaped and "//" is silently collapsed.
//
// Here every request carries its own headers and context, object paths are
// escaped segment by segment (ValidateKey rejects empty segments instead of
// rewriting them), uploads stream the body with x-upsert: false, downloads
// stream the response body, and the HTTP status decides the error code:
// 404 snapshot_not_found, 409 exists, 401/403 a credentials error, 429 and
// 5xx storage_unavailable (retried). Older servers answer some errors with
// HTTP 400 and the real status in the body's "statusCode"; that field wins.
//
// The bucket (browser-profiles by default) is created, private, by the
// first upload when missing; other calls report a missing bucket.
type supabaseStore struct {
	base   string // https://ref.supabase.co/storage/v1
	bucket string
	prefix string
	key    string
	opts   Options

	mu          sync.Mutex
	bucketReady bool
	created     bool // this store created the bucket (see CreatedBucket)
}

// CreatedBucket names the bucket when this store created it (on its first
// upload), else "". Check reports it: a misspelt bucket name would
// otherwise pass a store check by being created.
func (s *supabaseStore) CreatedBucket() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.created {
		return s.bucket
	}
	return ""
}

// DefaultSupabaseBucket is the bucket of a supabase:// URL that names none.
const DefaultSupabaseBucket = "browser-profiles"

func openSupabase(rawURL string, opts Options) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, badURL(rawURL, "%v", parseErr(rawURL, err))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, badURL(rawURL, "supabase:// URLs take only a bucket and a prefix; the project comes from SUPABASE_URL")
	}
	if strings.Contains(u.Host, ":") {
		return nil, badURL(rawURL, "%s", colonInBucket).WithHint("set SUPABASE_URL (https://<ref>.supabase.co) and SUPABASE_SERVICE_KEY (the service_role key), or --supabase-url and --supabase-service-key")
	}
	s := &supabaseStore{bucket: u.Host, prefix: strings.Trim(u.Path, "/"), key: opts.SupabaseServiceKey, opts: opts}
	if s.bucket == "" {
		s.bucket = DefaultSupabaseBucket
	}
	if strings.ContainsAny(s.bucket, "/%") {
		return nil, badURL(rawURL, "bucket %q", s.bucket)
	}
	if c := supabaseRefuses(s.bucket); c != "" {
		return nil, badURL(rawURL, "bucket %q: Supabase Storage refuses %s in bucket names", s.bucket, c)
	}
	if s.prefix != "" {
		if err := validatePrefix(s.prefix + "/"); err != nil {
			return nil, badURL(rawURL, "prefix %q: %v", s.prefix, err)
		}
		if c := supabaseRefuses(s.prefix); c != "" {
			return nil, badURL(rawURL, "prefix %q: Supabase Storage refuses %s in object names, and every object name starts with the prefix", s.prefix, c)
		}
	}
	if opts.SupabaseURL == "" || opts.SupabaseServiceKey == "" {
		return nil, errcode.New(errcode.InvalidInput, "no Supabase project for %s", s).
			WithHint("set SUPABASE_URL (https://<ref>.supabase.co) and SUPABASE_SERVICE_KEY (the service_role key), or --supabase-url and --supabase-service-key")
	}
	pu, err := url.Parse(strings.TrimRight(opts.SupabaseURL, "/"))
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return nil, errcode.New(errcode.InvalidInput, "bad SUPABASE_URL %q", opts.SupabaseURL).
			WithHint("use the project URL, e.g. https://abcdefgh.supabase.co")
	}
	base := pu.Scheme + "://" + pu.Host + strings.TrimSuffix(pu.EscapedPath(), "/")
	if !strings.HasSuffix(base, "/storage/v1") {
		base += "/storage/v1"
	}
	s.base = base
	return s, nil
}

func (s *supabaseStore) String() string {
	u := "supabase://" + s.bucket
	if s.prefix != "" {
		u += "/" + s.prefix
	}
	return u
}

// CatalogID names the store in the catalog: String() does not show the
// project (it comes from SUPABASE_URL), and two projects' buckets of one
// name are two stores.
func (s *supabaseStore) CatalogID() string {
	host := strings.TrimPrefix(strings.TrimPrefix(s.base, "https://"), "http://")
	host = strings.TrimSuffix(host, "/storage/v1")
	return s.String() + "?project=" + url.QueryEscape(host)
}

func (s *supabaseStore) full(key string) string {
	if s.prefix == "" {
		return key
	}
	return s.prefix + "/" + key
}

// supabaseRefuses describes the first character of name that Supabase
// Storage refuses in object names and bucket names, or returns "". The
// service (isValidKey in supabase/storage's src/storage/limits.ts) answers
// an upload of such a name with 400 InvalidKey: C0 and C1 control
// characters, S3's "characters to avoid" (# [ ] { } ^ ` " < > \ | % ~) and
// the invisible characters of Unicode UTS #55. Checking first turns a store
// URL whose prefix holds one into invalid_input before any request, not a
// storage_unavailable on every upload.
func supabaseRefuses(name string) string {
	for _, r := range name {
		switch {
		case r < 0x20, r >= 0x7f && r <= 0x9f,
			r == 0x034f, r == 0x061c, r == 0x200b, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029,
			r >= 0x202a && r <= 0x202e, r == 0x2060, r >= 0x2066 && r <= 0x2069, r == 0xfeff:
			return fmt.Sprintf("the character U+%04X", r)
		case strings.ContainsRune("#[]{}^`\"<>\\|%~", r):
			return fmt.Sprintf("%q", r)
		}
	}
	return ""
}

// validKey is ValidateKey with the characters Supabase Storage refuses.
func (s *supabaseStore) validKey(key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if c := supabaseRefuses(s.full(key)); c != "" {
		return badKey(key, "Supabase Storage refuses %s in object names", c)
	}
	return nil
}

// escapePath escapes each segment of a slash-separated path; storage-go
// does not, so a key with a space or "#" would break its requests.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return strings.Join(segs, "/")
}

func (s *supabaseStore) objectPath(kind, key string) string {
	return "/object/" + kind + url.PathEscape(s.bucket) + "/" + escapePath(s.full(key))
}

// apiError is a non-2xx answer, with the status the server meant.
type apiError struct {
	HTTPStatus int
	Status     int    // the body's statusCode when present, else HTTPStatus
	Err        string // the body's "error"
	Message    string // the body's "message"
}

func (e *apiError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Err
	}
	if msg == "" {
		msg = http.StatusText(e.HTTPStatus)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, msg)
}

// send performs one request with both auth headers; a non-2xx answer is
// returned as *apiError with the body read (at most 64 KiB) and closed.
func (s *supabaseStore) send(ctx context.Context, method, path string, body io.Reader, size int64, hdr http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("apikey", s.key)
	if body != nil && size >= 0 {
		req.ContentLength = size
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	resp, err := s.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	ae := &apiError{HTTPStatus: resp.StatusCode, Status: resp.StatusCode}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var eb struct {
		StatusCode json.RawMessage `json:"statusCode"`
		Error      string          `json:"error"`
		Message    string          `json:"message"`
	}
	if json.Unmarshal(data, &eb) == nil {
		ae.Err, ae.Message = eb.Error, eb.Message
		code := strings.Trim(string(eb.StatusCode), `"`)
		if n, err := strconv.Atoi(code); err == nil && n >= 100 && n < 600 {
			ae.Status = n
		}
	}
	return nil, ae
}

func jsonBody(v any) (io.Reader, int64, http.Header) {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b), int64(len(b)), http.Header{"Content-Type": {"application/json"}}
}

const supabaseCredHint = "the server refused the key: check that SUPABASE_SERVICE_KEY (or --supabase-service-key) is the project's service_role key, not the anon key, and that SUPABASE_URL is the same project"

// classify turns a transport error or *apiError into the coded error of the
// call what.
func (s *supabaseStore) classify(ctx context.Context, what string, err error) error {
	if cerr := ctxErr(ctx, s, what); cerr != nil {
		return cerr
	}
	if derr := deadlineErr(s, what, err); derr != nil {
		return derr
	}
	var ae *apiError
	if errors.As(err, &ae) {
		text := strings.ToLower(ae.Err + " " + ae.Message)
		switch {
		case strings.Contains(text, "bucket not found"):
			return fail(s, what, ProblemNoBucket, false,
				fmt.Sprintf("bucket %q does not exist and could not be created; create it in the Supabase dashboard (Storage, New bucket, private)", s.bucket), err)
		case ae.Status == http.StatusNotFound:
			return fail(s, what, ProblemNotFound, false, "", err)
		case ae.Status == http.StatusConflict:
			return fail(s, what, ProblemExists, false,
				"objects are never overwritten; retry to get a new snapshot name, or delete the old object first", err)
		case ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden,
			strings.Contains(text, "jwt"), strings.Contains(text, "invalid signature"), strings.Contains(text, "unauthorized"):
			return fail(s, what, ProblemCredentials, false, supabaseCredHint, err)
		case ae.Status == http.StatusRequestEntityTooLarge:
			return fail(s, what, "", false,
				"the object is larger than the project's upload limit; raise it under Storage settings (the free plan allows 50 MB)", err)
		case ae.Status == http.StatusTooManyRequests || ae.Status >= 500:
			return fail(s, what, ProblemServer, true, "", err)
		}
		return fail(s, what, "", false, "", err)
	}
	if p, transient, ok := netProblem(err); ok {
		hint := ""
		if p == ProblemUnreachable {
			hint = fmt.Sprintf("cannot reach %s: check SUPABASE_URL (or --supabase-url) and the network", s.base)
		}
		return fail(s, what, p, transient, hint, err)
	}
	return fail(s, what, "", false, "", err)
}

// ensureBucket checks once per store that the bucket exists. An upload
// (create) creates it, private, when it does not; a concurrent creation
// (409) counts as success. Any other call fails on a missing bucket
// instead: a restore, listing or prune through a misspelt bucket name would
// otherwise create an empty bucket and report that it holds no snapshot.
func (s *supabaseStore) ensureBucket(ctx context.Context, create bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bucketReady {
		return nil
	}
	what := fmt.Sprintf("check bucket %q", s.bucket)
	err := s.opts.Retry.do(ctx, s.opts.Log, what, s.opts.CallTimeout, func(ctx context.Context) error {
		resp, err := s.send(ctx, http.MethodGet, "/bucket/"+url.PathEscape(s.bucket), nil, -1, nil)
		if err == nil {
			var b storage_go.Bucket
			derr := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&b)
			resp.Body.Close()
			if derr != nil {
				return fail(s, what, ProblemServer, true, "", fmt.Errorf("decoding the bucket: %w", derr))
			}
			return nil
		}
		return s.classify(ctx, what, err)
	})
	if (ProblemOf(err) == ProblemNoBucket || errors.Is(err, ErrNotFound)) && !create {
		hint := fmt.Sprintf("bucket %q does not exist in the project of SUPABASE_URL: check the bucket name in the store URL (supabase://BUCKET/PREFIX) and SUPABASE_URL; "+
			"if the name is right, create the bucket (private): `director store check` does, and says so, as does the first snapshot into it", s.bucket)
		if ProblemOf(err) == ProblemNoBucket {
			return errcode.Hinted(err, errcode.StorageUnavailable, hint, "")
		}
		return fail(s, what, ProblemNoBucket, false, hint, errors.New("bucket not found"))
	}
	if ProblemOf(err) == ProblemNoBucket || errors.Is(err, ErrNotFound) {
		what = fmt.Sprintf("create bucket %q", s.bucket)
		s.opts.Log.Info("creating the Supabase bucket", "bucket", s.bucket)
		err = s.opts.Retry.do(ctx, s.opts.Log, what, s.opts.CallTimeout, func(ctx context.Context) error {
			body, n, hdr := jsonBody(map[string]any{"id": s.bucket, "name": s.bucket, "public": false})
			resp, err := s.send(ctx, http.MethodPost, "/bucket", body, n, hdr)
			if err == nil {
				resp.Body.Close()
				return nil
			}
			cerr := s.classify(ctx, what, err)
			if errors.Is(cerr, ErrExists) {
				return nil
			}
			return cerr
		})
		s.created = err == nil
	}
	if err != nil {
		return err
	}
	s.bucketReady = true
	return nil
}

func (s *supabaseStore) Stat(ctx context.Context, key string) (Object, error) {
	if err := s.validKey(key); err != nil {
		return Object{}, err
	}
	if err := s.ensureBucket(ctx, false); err != nil {
		return Object{}, err
	}
	what := fmt.Sprintf("stat %q", key)
	var obj Object
	err := s.opts.Retry.do(ctx, s.opts.Log, what, s.opts.CallTimeout, func(ctx context.Context) error {
		resp, err := s.send(ctx, http.MethodHead, s.objectPath("authenticated/", key), nil, -1, nil)
		if err != nil {
			var ae *apiError
			// A HEAD answer has no body; like storage-js, read 400 as missing.
			if errors.As(err, &ae) && ae.HTTPStatus == http.StatusBadRequest {
				return fail(s, what, ProblemNotFound, false, "", err)
			}
			return s.classify(ctx, what, err)
		}
		resp.Body.Close()
		obj = objectFromHeaders(key, resp)
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return Object{}, notFound(s, key)
	}
	return obj, err
}

func objectFromHeaders(key string, resp *http.Response) Object {
	obj := Object{Key: key, Size: resp.ContentLength}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		obj.Modified = t.UTC()
	}
	return obj
}

func (s *supabaseStore) Get(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	if err := s.validKey(key); err != nil {
		return nil, Object{}, err
	}
	if err := s.ensureBucket(ctx, false); err != nil {
		return nil, Object{}, err
	}
	what := fmt.Sprintf("get %q", key)
	var g *getReader
	// Opening, up to the response headers, is bounded by CallTimeout per
	// attempt and retried; the body then streams with no overall deadline,
	// bounded by IdleTimeout between bytes (watchTransport).
	err := s.opts.Retry.do(ctx, s.opts.Log, what, 0, func(_ context.Context) error {
		rctx, cancel, opened := openCtx(ctx, s.opts.CallTimeout)
		resp, err := s.send(rctx, http.MethodGet, s.objectPath("authenticated/", key), nil, -1, nil)
		if !opened() {
			if err == nil {
				resp.Body.Close()
			}
			err = &callTimeoutError{s.opts.CallTimeout}
		}
		if err != nil {
			cerr := s.classify(rctx, what, err)
			cancel()
			return cerr
		}
		obj := objectFromHeaders(key, resp)
		g = &getReader{rc: resp.Body, ctx: rctx, cancel: cancel, store: s, key: key, size: obj.Size, obj: obj}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, Object{}, notFound(s, key)
		}
		return nil, Object{}, err
	}
	return g, g.obj, nil
}

func (s *supabaseStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := s.validKey(key); err != nil {
		return err
	}
	if err := s.ensureBucket(ctx, true); err != nil {
		return err
	}
	if err := checkNewKey(ctx, s, key); err != nil {
		return err
	}
	what := fmt.Sprintf("put %q", key)
	rewind, canReplay := replayable(r)
	attempts := 1
	if canReplay {
		attempts = s.opts.Retry.Attempts
	}
	hdr := http.Header{
		"Content-Type":  {"application/octet-stream"},
		"X-Upsert":      {"false"},
		"Cache-Control": {"no-store"},
	}
	for attempt := 1; ; attempt++ {
		body := newBody(ctxReader{ctx, r}, size)
		resp, err := s.send(ctx, http.MethodPost, s.objectPath("", key), body, size, hdr)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		var ae *apiError
		if !errors.As(err, &ae) {
			// No answer: the server may have stored the object before the
			// connection broke. Remove it so a failed Put leaves nothing.
			s.removeAfterFailure(ctx, key)
		}
		if cerr := ctxErr(ctx, s, what); cerr != nil {
			return cerr
		}
		if berr := body.bodyFailure(s, key); berr != nil {
			return berr
		}
		cerr := s.classify(ctx, what, err)
		if !isTransient(cerr) || attempt >= attempts {
			if isTransient(cerr) && !canReplay {
				return errcode.Hinted(cerr, errcode.StorageUnavailable,
					errcode.HintOf(cerr)+"; the upload was streamed and cannot be replayed, so it was not retried, and it left no object: run the command again once the store is back (`director store check` tells when)",
					"upload interrupted")
			}
			return interrupted(cerr)
		}
		wait := s.opts.Retry.delay(attempt)
		s.opts.Log.Info("upload failed, retrying", "store", s.String(), "key", key, "attempt", attempt, "wait", wait, "err", err)
		select {
		case <-ctx.Done():
			return s.classify(ctx, what, err)
		case <-time.After(wait):
		}
		if err := rewind(); err != nil {
			return errcode.Wrap(err, errcode.Internal, "%s: %s", s, what)
		}
	}
}

func (s *supabaseStore) removeAfterFailure(ctx context.Context, key string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.CallTimeout)
	defer cancel()
	if err := s.remove(cctx, key); err != nil {
		s.opts.Log.Warn("could not remove what a failed upload may have left", "store", s.String(), "key", key, "err", err)
	}
}

func (s *supabaseStore) remove(ctx context.Context, key string) error {
	body, n, hdr := jsonBody(map[string]any{"prefixes": []string{s.full(key)}})
	resp, err := s.send(ctx, http.MethodDelete, "/object/"+url.PathEscape(s.bucket), body, n, hdr)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func (s *supabaseStore) Delete(ctx context.Context, key string) error {
	if err := s.validKey(key); err != nil {
		return err
	}
	if err := s.ensureBucket(ctx, false); err != nil {
		return err
	}
	what := fmt.Sprintf("delete %q", key)
	err := s.opts.Retry.do(ctx, s.opts.Log, what, s.opts.CallTimeout, func(ctx context.Context) error {
		if err := s.remove(ctx, key); err != nil {
			return s.classify(ctx, what, err)
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// listRequest is storage-go's list body plus the "search" field it lacks:
// the list endpoint lists one folder, and search filters names in it.
type listRequest struct {
	storage_go.ListFileRequestBody
	Search string `json:"search,omitempty"`
}

const listPage = 1000

// maxListPageBytes bounds one listing page's JSON; maxListDepth the folders
// a listing walks below the one it starts in.
const (
	maxListPageBytes = 16 << 20
	maxListDepth     = 32
)

// listOverlap is how many entries of the page before a list call asks for
// again: the one it ended with proves that no entry was skipped between the
// two pages (see List).
const listOverlap = 100

// List walks the folders under the prefix: the list endpoint returns one
// folder level (folders have a null id), paged by limit and offset. Pages
// overlap, so that objects deleted during the listing (a prune on another
// machine) cannot make it step over others: every object present from the
// listing's start to its end is listed once.
func (s *supabaseStore) List(ctx context.Context, prefix string) ([]Object, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, err
	}
	if c := supabaseRefuses(prefix); c != "" {
		return nil, badKey(prefix, "Supabase Storage refuses %s in object names", c)
	}
	if err := s.ensureBucket(ctx, false); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("list %q", prefix)
	full := s.full(prefix)
	if s.prefix != "" && prefix == "" {
		full = s.prefix + "/"
	}
	folder, search := "", full
	if i := strings.LastIndex(full, "/"); i >= 0 {
		folder, search = full[:i], full[i+1:]
	}
	objs := []Object{}
	var walk func(folder, search string, depth int) error
	walk = func(folder, search string, depth int) error {
		if depth > maxListDepth {
			// Director's keys nest two folders under the prefix: a server
			// that keeps answering with deeper ones would be walked forever.
			return fail(s, what, ProblemServer, false, "the server lists folders no director snapshot makes; check the store URL and the Supabase project", fmt.Errorf("the listing nests folders more than %d deep under %q", maxListDepth, prefix))
		}
		// seen holds the entries of this folder already taken, by name and
		// kind: a folder and an object may share a name.
		seen := map[string]bool{}
		entry := func(f storage_go.FileObject) string {
			if f.Id == "" {
				return f.Name + "/"
			}
			return f.Name
		}
		stale := 0 // full pages in a row that brought nothing new
		for offset := 0; ; {
			var page []storage_go.FileObject
			err := s.opts.Retry.do(ctx, s.opts.Log, what, s.opts.CallTimeout, func(ctx context.Context) error {
				req := listRequest{ListFileRequestBody: storage_go.ListFileRequestBody{
					Prefix: folder, Limit: listPage, Offset: offset,
					SortByOptions: storage_go.SortBy{Column: "name", Order: "asc"},
				}, Search: search}
				body, n, hdr := jsonBody(req)
				resp, err := s.send(ctx, http.MethodPost, "/object/list/"+url.PathEscape(s.bucket), body, n, hdr)
				if err != nil {
					return s.classify(ctx, what, err)
				}
				defer resp.Body.Close()
				page = nil
				// A page of listPage entries is some hundred KB: a bound
				// keeps a broken or hostile server from growing memory.
				if err := json.NewDecoder(io.LimitReader(resp.Body, maxListPageBytes)).Decode(&page); err != nil {
					return s.classify(ctx, what, fmt.Errorf("decoding the listing: %w", err))
				}
				return nil
			})
			if err != nil {
				return err
			}
			if offset > 0 && (len(page) == 0 || !seen[entry(page[0])]) {
				// A later page starts listOverlap entries before where the
				// one before it ended, so its first entry is one already
				// taken, unless entries before it were deleted meanwhile (a
				// prune elsewhere) and the folder moved left past it: then
				// the entries in between were never returned. Go back a
				// page and look again; offset 0 always holds.
				offset = max(0, offset-listPage)
				continue
			}
			fresh := false
			for _, f := range page {
				if seen[entry(f)] {
					continue
				}
				seen[entry(f)] = true
				fresh = true
				p := f.Name
				if folder != "" {
					p = folder + "/" + f.Name
				}
				if f.Id == "" { // a folder
					if strings.HasPrefix(p+"/", full) || strings.HasPrefix(full, p+"/") {
						if err := walk(p, "", depth+1); err != nil {
							return err
						}
					}
					continue
				}
				if !strings.HasPrefix(p, full) {
					continue // search matches case-insensitively and treats % and _ as wildcards
				}
				objs = append(objs, fileObject(s.prefix, p, f))
			}
			if len(page) < listPage {
				return nil
			}
			if stale++; fresh {
				stale = 0
			} else if stale == 3 {
				return errcode.New(errcode.StorageUnavailable, "%s: the listing of %q does not advance: three full pages brought no new object", what, folder).
					WithHint("the service ignores the list call's offset; check that SUPABASE_URL names a Supabase Storage service")
			}
			offset += len(page) - listOverlap
		}
	}
	if err := walk(folder, search, 0); err != nil {
		return nil, err
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	return objs, nil
}

func fileObject(prefix, p string, f storage_go.FileObject) Object {
	key := p
	if prefix != "" {
		key = strings.TrimPrefix(p, prefix+"/")
	}
	obj := Object{Key: key}
	if md, ok := f.Metadata.(map[string]any); ok {
		if n, ok := md["size"].(float64); ok {
			obj.Size = int64(n)
		}
		if lm, ok := md["lastModified"].(string); ok {
			if t, err := time.Parse(time.RFC3339Nano, lm); err == nil {
				obj.Modified = t.UTC()
			}
		}
	}
	if obj.Modified.IsZero() {
		if t, err := time.Parse(time.RFC3339Nano, f.UpdatedAt); err == nil {
			obj.Modified = t.UTC()
		}
	}
	return obj
}
