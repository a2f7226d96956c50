package storage

// This file is a PROTOCOL DOUBLE of Supabase Storage, not a Supabase server:
// no Supabase Storage server can run in this sandbox (it needs Postgres,
// PostgREST and the storage-api service). The double follows the documented
// REST protocol (https://supabase.github.io/storage/, and the self-hosting
// storage reference) for exactly the endpoints the supabase backend uses:
//
//	GET    /storage/v1/bucket/{id}                          bucket details
//	POST   /storage/v1/bucket                               create a bucket
//	POST   /storage/v1/object/{bucket}/{path}               upload (x-upsert: false refuses an existing path)
//	HEAD   /storage/v1/object/authenticated/{bucket}/{path} object headers
//	GET    /storage/v1/object/authenticated/{bucket}/{path} download
//	POST   /storage/v1/object/list/{bucket}                 list one folder level: prefix, search, limit, offset, sortBy
//	DELETE /storage/v1/object/{bucket}                      delete {"prefixes": [...]}
//
// with the service's error bodies, e.g. {"statusCode":"404","error":"not_found",
// "message":"Object not found"}. It asserts that every request carries the
// key both as "Authorization: Bearer" and as "apikey", that object paths
// arrive escaped segment by segment (a raw "#" or space would lose or mangle
// the path), and it streams uploads to files and downloads from them, so that
// memory measured in the test process is the client's.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// supabaseListCap is the most entries one list call returns, whatever
// limit it asks for.
const supabaseListCap = 1500

type supaObject struct {
	file     string
	size     int64
	modified time.Time
	id       string
}

type supabaseDouble struct {
	t      testing.TB
	srv    *httptest.Server
	key    string
	dir    string
	legacy bool // answer errors with HTTP 400 and the real status in the body, like older servers
	// maxUpload, when positive, is the project's upload size limit: a
	// larger upload is refused with 413 "Payload too large" (EntityTooLarge
	// in supabase/storage's src/storage/errors.ts), as soon as its
	// Content-Length says so, or once a streamed body passes the limit,
	// without reading the rest.
	maxUpload int64
	// ignoreOffset answers every list call from the folder's start, as a
	// service that does not implement paging would.
	ignoreOffset bool

	mu        sync.Mutex
	buckets   map[string]bool
	objects   map[string]map[string]*supaObject // bucket -> name -> object
	seq       int
	authFails int
	requests  []string // "METHOD /path" as received (escaped)
	// fail, when set, may answer a request with an injected HTTP status.
	fail func(r *http.Request) int
}

func newSupabaseDouble(t testing.TB) *supabaseDouble {
	d := &supabaseDouble{
		t:       t,
		key:     "service-role-key-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		dir:     t.TempDir(),
		buckets: map[string]bool{},
		objects: map[string]map[string]*supaObject{},
	}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *supabaseDouble) opts() Options {
	return Options{SupabaseURL: d.srv.URL, SupabaseServiceKey: d.key, Retry: RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}}
}

func (d *supabaseDouble) errorBody(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	httpStatus := status
	if d.legacy && status < 500 {
		httpStatus = http.StatusBadRequest
	}
	w.WriteHeader(httpStatus)
	_ = json.NewEncoder(w).Encode(map[string]string{"statusCode": strconv.Itoa(status), "error": code, "message": msg})
}

func (d *supabaseDouble) serve(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.requests = append(d.requests, r.Method+" "+r.URL.EscapedPath())
	fail := d.fail
	d.mu.Unlock()

	if r.Header.Get("Authorization") != "Bearer "+d.key || r.Header.Get("apikey") != d.key {
		d.mu.Lock()
		d.authFails++
		d.mu.Unlock()
		d.errorBody(w, http.StatusForbidden, "Unauthorized", "invalid signature")
		return
	}
	if fail != nil {
		if st := fail(r); st != 0 {
			_, _ = io.Copy(io.Discard, r.Body)
			d.errorBody(w, st, "ServiceUnavailable", "injected failure")
			return
		}
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/storage/v1/")
	if !ok {
		d.errorBody(w, http.StatusNotFound, "not_found", "Route not found")
		return
	}
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(rest, "bucket/"):
		d.getBucket(w, unescape(d.t, strings.TrimPrefix(rest, "bucket/")))
	case r.Method == http.MethodPost && rest == "bucket":
		d.createBucket(w, r)
	case r.Method == http.MethodPost && strings.HasPrefix(rest, "object/list/"):
		d.list(w, r, unescape(d.t, strings.TrimPrefix(rest, "object/list/")))
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.HasPrefix(rest, "object/authenticated/"):
		bucket, name := splitObject(d.t, strings.TrimPrefix(rest, "object/authenticated/"))
		d.download(w, r, bucket, name)
	case r.Method == http.MethodPost && strings.HasPrefix(rest, "object/"):
		bucket, name := splitObject(d.t, strings.TrimPrefix(rest, "object/"))
		d.upload(w, r, bucket, name)
	case r.Method == http.MethodDelete && strings.HasPrefix(rest, "object/") && !strings.Contains(strings.TrimPrefix(rest, "object/"), "/"):
		d.remove(w, r, unescape(d.t, strings.TrimPrefix(rest, "object/")))
	default:
		d.t.Errorf("supabase double: unexpected request %s %s", r.Method, r.URL.EscapedPath())
		d.errorBody(w, http.StatusNotFound, "not_found", "Route not found")
	}
}

func unescape(t testing.TB, s string) string {
	u, err := url.PathUnescape(s)
	if err != nil {
		t.Errorf("supabase double: bad escaping %q: %v", s, err)
	}
	return u
}

// splitObject splits "bucket/a/b%20c" into the bucket and the unescaped
// object name, segment by segment as the service's router does.
func splitObject(t testing.TB, p string) (string, string) {
	bucket, name, _ := strings.Cut(p, "/")
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = unescape(t, s)
	}
	return unescape(t, bucket), strings.Join(segs, "/")
}

func (d *supabaseDouble) getBucket(w http.ResponseWriter, id string) {
	d.mu.Lock()
	ok := d.buckets[id]
	d.mu.Unlock()
	if !ok {
		d.errorBody(w, http.StatusNotFound, "Bucket not found", "Bucket not found")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "name": id, "owner": "", "public": false,
		"created_at": "2026-11-22T03:00:00.000Z", "updated_at": "2026-11-22T03:00:00.000Z"})
}

func (d *supabaseDouble) createBucket(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Public bool   `json:"public"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Name == "" {
		d.errorBody(w, http.StatusBadRequest, "Invalid Input", "body must have name")
		return
	}
	if body.Public {
		d.t.Errorf("supabase double: bucket %q created public", body.Name)
	}
	id := body.ID
	if id == "" {
		id = body.Name
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.buckets[id] {
		d.errorBody(w, http.StatusConflict, "Duplicate", "The resource already exists")
		return
	}
	d.buckets[id] = true
	d.objects[id] = map[string]*supaObject{}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"name": id})
}

// validKey is the service's isValidKey (supabase/storage,
// src/storage/limits.ts): an object name must not hold C0 or C1 control
// characters, S3's "characters to avoid" # [ ] { } ^ ` " < > \ | % ~, the
// invisible characters Unicode UTS #55 lists, nor "." or ".." segments.
// An upload of any other name is refused with 400 InvalidKey.
func validKey(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		switch {
		case r < 0x20, r >= 0x7f && r <= 0x9f, strings.ContainsRune("#[]{}^`\"<>\\|%~", r),
			r == 0x034f, r == 0x061c, r == 0x200b, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029,
			r >= 0x202a && r <= 0x202e, r == 0x2060, r >= 0x2066 && r <= 0x2069, r == 0xfeff:
			return false
		}
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return len(name) <= 1024
}

func (d *supabaseDouble) upload(w http.ResponseWriter, r *http.Request, bucket, name string) {
	if r.Header.Get("x-upsert") != "false" {
		d.t.Errorf("supabase double: upload of %q without x-upsert: false (got %q)", name, r.Header.Get("x-upsert"))
	}
	if !validKey(name) {
		_, _ = io.Copy(io.Discard, r.Body)
		d.errorBody(w, http.StatusBadRequest, "InvalidKey", "Invalid key: "+name)
		return
	}
	d.mu.Lock()
	objs, ok := d.objects[bucket]
	_, exists := objs[name]
	d.seq++
	tmp := filepath.Join(d.dir, fmt.Sprintf("obj-%d", d.seq))
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", d.seq)
	d.mu.Unlock()
	if !ok {
		d.errorBody(w, http.StatusNotFound, "Bucket not found", "Bucket not found")
		return
	}
	if exists {
		d.errorBody(w, http.StatusConflict, "Duplicate", "The resource already exists")
		return
	}
	tooLarge := func() {
		d.errorBody(w, http.StatusRequestEntityTooLarge, "Payload too large", "The object exceeded the maximum allowed size")
	}
	if d.maxUpload > 0 && r.ContentLength > d.maxUpload {
		tooLarge()
		return
	}
	f, err := os.Create(tmp)
	if err != nil {
		d.t.Errorf("supabase double: %v", err)
		return
	}
	var body io.Reader = r.Body
	if d.maxUpload > 0 {
		body = io.LimitReader(r.Body, d.maxUpload+1)
	}
	n, err := io.Copy(f, body)
	f.Close()
	if err != nil {
		// The client went away: the service stores nothing.
		os.Remove(tmp)
		return
	}
	if d.maxUpload > 0 && n > d.maxUpload {
		os.Remove(tmp)
		tooLarge()
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, exists := d.objects[bucket][name]; exists {
		os.Remove(tmp)
		d.errorBody(w, http.StatusConflict, "Duplicate", "The resource already exists")
		return
	}
	d.objects[bucket][name] = &supaObject{file: tmp, size: n, modified: time.Now().UTC(), id: id}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"Id": id, "Key": bucket + "/" + name})
}

func (d *supabaseDouble) lookup(bucket, name string) *supaObject {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.objects[bucket][name]
}

func (d *supabaseDouble) download(w http.ResponseWriter, r *http.Request, bucket, name string) {
	o := d.lookup(bucket, name)
	if o == nil {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		d.errorBody(w, http.StatusNotFound, "not_found", "Object not found")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(o.size, 10))
	w.Header().Set("Last-Modified", o.modified.Format(http.TimeFormat))
	w.Header().Set("ETag", `"`+o.id+`"`)
	if r.Method == http.MethodHead {
		return
	}
	f, err := os.Open(o.file)
	if err != nil {
		d.t.Errorf("supabase double: %v", err)
		return
	}
	defer f.Close()
	_, _ = io.Copy(w, f)
}

func (d *supabaseDouble) list(w http.ResponseWriter, r *http.Request, bucket string) {
	var body struct {
		Prefix string `json:"prefix"`
		Limit  int    `json:"limit"`
		Offset int    `json:"offset"`
		SortBy struct {
			Column string `json:"column"`
			Order  string `json:"order"`
		} `json:"sortBy"`
		Search string `json:"search"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		d.errorBody(w, http.StatusBadRequest, "Invalid Input", err.Error())
		return
	}
	// storage.search defaults the limit to 100 and caps it at 1500
	// (supabase/storage, migrations/tenant/0063-fix-search-name-relative-to-prefix.sql:
	// "v_limit := LEAST(coalesce(limits, 100), 1500)"): a client that asks
	// for more gets 1500 and must page on, not take a short page for the end.
	if body.Limit <= 0 {
		body.Limit = 100
	}
	body.Limit = min(body.Limit, supabaseListCap)
	folder := strings.Trim(body.Prefix, "/")
	if folder != "" {
		folder += "/"
	}
	type entry struct {
		Name           string         `json:"name"`
		ID             *string        `json:"id"`
		UpdatedAt      *string        `json:"updated_at"`
		CreatedAt      *string        `json:"created_at"`
		LastAccessedAt *string        `json:"last_accessed_at"`
		Metadata       map[string]any `json:"metadata"`
	}
	d.mu.Lock()
	objs, ok := d.objects[bucket]
	seen := map[string]bool{}
	var out []entry
	for name, o := range objs {
		rest, ok := strings.CutPrefix(name, folder)
		if !ok {
			continue
		}
		first, _, isFolder := strings.Cut(rest, "/")
		// search is an ILIKE 'search%' on the entry name.
		// An object and a folder may share a name ("x" and "x/y"): the
		// service returns both, the object first (storage.search seeks past
		// "x" to "x/", then finds the folder).
		kind := first
		if isFolder {
			kind += "/"
		}
		if !strings.HasPrefix(strings.ToLower(first), strings.ToLower(body.Search)) || seen[kind] {
			continue
		}
		seen[kind] = true
		if isFolder {
			out = append(out, entry{Name: first})
			continue
		}
		ts := o.modified.Format("2006-01-02T15:04:05.000Z")
		id := o.id
		out = append(out, entry{Name: first, ID: &id, UpdatedAt: &ts, CreatedAt: &ts, LastAccessedAt: &ts,
			Metadata: map[string]any{"size": o.size, "mimetype": "application/octet-stream", "lastModified": ts,
				"contentLength": o.size, "cacheControl": "no-store", "eTag": `"` + o.id + `"`, "httpStatusCode": 200}})
	}
	d.mu.Unlock()
	if !ok {
		d.errorBody(w, http.StatusNotFound, "Bucket not found", "Bucket not found")
		return
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID != nil // the object before the folder of its name
	})
	if body.SortBy.Order == "desc" {
		sort.Slice(out, func(i, j int) bool { return out[i].Name > out[j].Name })
	}
	if d.ignoreOffset {
		body.Offset = 0
	}
	if body.Offset < len(out) {
		out = out[body.Offset:]
	} else {
		out = nil
	}
	if len(out) > body.Limit {
		out = out[:body.Limit]
	}
	if out == nil {
		out = []entry{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (d *supabaseDouble) remove(w http.ResponseWriter, r *http.Request, bucket string) {
	var body struct {
		Prefixes []string `json:"prefixes"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Prefixes) == 0 {
		d.errorBody(w, http.StatusBadRequest, "Invalid Input", "body must have prefixes")
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	objs, ok := d.objects[bucket]
	if !ok {
		d.errorBody(w, http.StatusNotFound, "Bucket not found", "Bucket not found")
		return
	}
	deleted := []map[string]any{}
	for _, p := range body.Prefixes {
		if o, ok := objs[p]; ok {
			os.Remove(o.file)
			delete(objs, p)
			deleted = append(deleted, map[string]any{"name": p, "bucket_id": bucket, "id": o.id, "metadata": map[string]any{"size": o.size}})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(deleted)
}

// seed stores n objects "<folder>/<folder>-NNNNN" of one byte each straight
// into a bucket, without uploads, for listings of many objects.
func (d *supabaseDouble) seed(bucket, folder string, n int) {
	f := filepath.Join(d.dir, "seed")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		d.t.Fatal(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.buckets[bucket] {
		d.buckets[bucket] = true
		d.objects[bucket] = map[string]*supaObject{}
	}
	for i := range n {
		d.seq++
		name := fmt.Sprintf("%s/%s-%05d", folder, folder, i)
		d.objects[bucket][name] = &supaObject{file: f, size: 1, modified: time.Now().UTC(), id: fmt.Sprintf("00000000-0000-4000-8000-%012d", d.seq)}
	}
}

// names lists every stored object of a bucket, for assertions.
func (d *supabaseDouble) names(bucket string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for n := range d.objects[bucket] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (d *supabaseDouble) authFailures() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.authFails
}

// requestLog returns the requests received so far, as "METHOD /escaped/path".
func (d *supabaseDouble) requestLog() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.requests)
}
