package storage

// This file is a PROTOCOL DOUBLE of an S3 endpoint served below a path, as
// Supabase's S3 endpoint is (https://PROJECT.supabase.co/storage/v1/s3), not
// a Supabase server: no Supabase Storage server can run in this sandbox (it
// needs Postgres, PostgREST and the storage-api service) and versitygw
// serves S3 at "/" only. The double answers on 127.0.0.1 under the prefix
// /storage/v1/s3, path-style, for exactly the S3 calls the s3 backend makes:
//
//	PUT    /storage/v1/s3/BUCKET/KEY                     PutObject (If-None-Match: * honoured)
//	POST   /storage/v1/s3/BUCKET/KEY?uploads             CreateMultipartUpload
//	PUT    /storage/v1/s3/BUCKET/KEY?partNumber&uploadId UploadPart
//	POST   /storage/v1/s3/BUCKET/KEY?uploadId            CompleteMultipartUpload (If-None-Match: * honoured)
//	DELETE /storage/v1/s3/BUCKET/KEY?uploadId            AbortMultipartUpload
//	GET    /storage/v1/s3/BUCKET/KEY, HEAD               GetObject, HeadObject
//	GET    /storage/v1/s3/BUCKET/?list-type=2            ListObjectsV2 (prefix, max-keys, continuation-token, encoding-type=url)
//	DELETE /storage/v1/s3/BUCKET/KEY                     DeleteObject
//
// with S3's XML error bodies. Like Supabase's storage-api it VERIFIES every
// request's AWS Signature Version 4 over the full path the server receives
// (prefix included), with its own implementation of the canonical request
// written here from the AWS SigV4 specification (crypto/hmac and
// crypto/sha256, no code of minio-go): a request signed over /BUCKET/KEY
// alone, or changed after signing, is refused with SignatureDoesNotMatch. A
// hex X-Amz-Content-Sha256 must match the body received; streaming (chunk
// signed) payloads are refused, since the path-prefixed client must never
// send them. Uploads stream to files under a temp dir and downloads from
// them, so memory measured in the test process is the client's.

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const s3PathPrefix = "/storage/v1/s3"

type s3dObject struct {
	file     string
	size     int64
	modified time.Time
	etag     string
}

type s3dPart struct {
	file string
	size int64
	etag string
}

type s3dUpload struct {
	key   string
	parts map[int]s3dPart
}

type s3PathDouble struct {
	t              testing.TB
	srv            *httptest.Server
	bucket, region string
	access, secret string
	dir            string

	mu       sync.Mutex
	objects  map[string]*s3dObject
	uploads  map[string]*s3dUpload
	seq      int
	rejected []string       // "METHOD path: reason" of requests refused for their signature or payload
	outside  []string       // requests that arrived outside the prefix
	payloads map[string]int // "METHOD mode" -> count; mode is "sha256", "UNSIGNED-PAYLOAD" or the header value
}

// newS3PathDouble starts the double over plain http, or over https when tls.
func newS3PathDouble(t testing.TB, tls bool) *s3PathDouble {
	d := &s3PathDouble{
		t:        t,
		bucket:   "profiles",
		region:   "eu-west-2",
		access:   "0123456789abcdef0123456789abcdef",
		secret:   "secret-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		dir:      t.TempDir(),
		objects:  map[string]*s3dObject{},
		uploads:  map[string]*s3dUpload{},
		payloads: map[string]int{},
	}
	if tls {
		d.srv = httptest.NewTLSServer(http.HandlerFunc(d.serve))
	} else {
		d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	}
	t.Cleanup(d.srv.Close)
	return d
}

// storeURL is the s3:// URL of prefix in the double's bucket, in the form a
// Supabase user writes: endpoint=http(s)://HOST/storage/v1/s3.
func (d *s3PathDouble) storeURL(prefix string) string {
	u := "s3://" + d.bucket
	if prefix != "" {
		u += "/" + prefix
	}
	return u + "?endpoint=" + d.srv.URL + s3PathPrefix + "&region=" + d.region
}

func (d *s3PathDouble) opts() Options {
	o := Options{AWSAccessKeyID: d.access, AWSSecretAccessKey: d.secret,
		Retry: RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}}
	if d.srv.TLS != nil {
		o.HTTPClient = d.srv.Client()
	}
	return o
}

// names lists the keys of objects and of pending multipart uploads.
func (d *s3PathDouble) names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for k := range d.objects {
		out = append(out, k)
	}
	for _, u := range d.uploads {
		out = append(out, u.key)
	}
	sort.Strings(out)
	return out
}

func (d *s3PathDouble) rejections() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.rejected)
}

func (d *s3PathDouble) outsidePrefix() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.outside)
}

func (d *s3PathDouble) payloadModes() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for k, v := range d.payloads {
		out[k] = v
	}
	return out
}

type s3dError struct {
	XMLName xml.Name `xml:"Error"`
	Code    string   `xml:"Code"`
	Message string   `xml:"Message"`
}

func (d *s3PathDouble) fail(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, xml.Header)
		_ = xml.NewEncoder(w).Encode(s3dError{Code: code, Message: msg})
	}
}

func (d *s3PathDouble) reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/xml")
	_, _ = io.WriteString(w, xml.Header)
	if err := xml.NewEncoder(w).Encode(v); err != nil {
		d.t.Errorf("s3 path double: encoding the answer: %v", err)
	}
}

func (d *s3PathDouble) serve(w http.ResponseWriter, r *http.Request) {
	rawPath, _, _ := strings.Cut(r.RequestURI, "?")
	rest, ok := strings.CutPrefix(r.URL.Path, s3PathPrefix+"/")
	if !ok {
		d.mu.Lock()
		d.outside = append(d.outside, r.Method+" "+rawPath)
		d.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		d.fail(w, r, http.StatusNotFound, "InvalidRequest", "not under "+s3PathPrefix)
		return
	}
	if code, err := d.verify(r, rawPath); err != nil {
		d.mu.Lock()
		d.rejected = append(d.rejected, r.Method+" "+rawPath+": "+err.Error())
		d.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		d.fail(w, r, http.StatusForbidden, code, err.Error())
		return
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket != d.bucket {
		_, _ = io.Copy(io.Discard, r.Body)
		d.fail(w, r, http.StatusNotFound, "NoSuchBucket", "Bucket not found")
		return
	}
	q := r.URL.Query()
	switch {
	case key == "" && r.Method == http.MethodGet && q.Get("list-type") == "2":
		d.list(w, r, q)
	case key == "":
		d.t.Errorf("s3 path double: unexpected bucket request %s %s", r.Method, r.RequestURI)
		d.fail(w, r, http.StatusNotImplemented, "NotImplemented", "not implemented by the double")
	case r.Method == http.MethodPut && q.Has("uploadId"):
		d.uploadPart(w, r, key, q)
	case r.Method == http.MethodPut:
		d.putObject(w, r, key)
	case r.Method == http.MethodPost && q.Has("uploads"):
		d.createUpload(w, r, key)
	case r.Method == http.MethodPost && q.Has("uploadId"):
		d.complete(w, r, key, q.Get("uploadId"))
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		d.abort(w, r, q.Get("uploadId"))
	case r.Method == http.MethodDelete:
		d.mu.Lock()
		if o := d.objects[key]; o != nil {
			_ = os.Remove(o.file)
			delete(d.objects, key)
		}
		d.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		d.get(w, r, key)
	default:
		d.t.Errorf("s3 path double: unexpected request %s %s", r.Method, r.RequestURI)
		d.fail(w, r, http.StatusNotImplemented, "NotImplemented", "not implemented by the double")
	}
}

// verify checks r's SigV4 Authorization header over the request as
// received, rawPath being the escaped path of the request target. It
// returns the S3 error code and the reason of a refusal.
func (d *s3PathDouble) verify(r *http.Request, rawPath string) (string, error) {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return "AccessDenied", errors.New("no AWS4-HMAC-SHA256 Authorization header")
	}
	fields := map[string]string{}
	for _, f := range strings.Split(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	cred := strings.Split(fields["Credential"], "/")
	if len(cred) != 5 || cred[3] != "s3" || cred[4] != "aws4_request" {
		return "AuthorizationHeaderMalformed", fmt.Errorf("malformed credential %q", fields["Credential"])
	}
	if cred[0] != d.access {
		return "InvalidAccessKeyId", errors.New("unknown access key")
	}
	if cred[2] != d.region {
		return "AuthorizationHeaderMalformed", fmt.Errorf("region %q, want %q", cred[2], d.region)
	}
	amzDate := r.Header.Get("X-Amz-Date")
	when, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || amzDate[:8] != cred[1] {
		return "AccessDenied", fmt.Errorf("X-Amz-Date %q does not match the credential date %q", amzDate, cred[1])
	}
	if skew := time.Since(when); skew > 15*time.Minute || skew < -15*time.Minute {
		return "RequestTimeTooSkewed", fmt.Errorf("request time %s", amzDate)
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	if !slices.IsSorted(signed) {
		return "SignatureDoesNotMatch", errors.New("signed headers not sorted")
	}
	for _, must := range []string{"host", "x-amz-content-sha256", "x-amz-date"} {
		if !slices.Contains(signed, must) {
			return "SignatureDoesNotMatch", fmt.Errorf("%s is not signed", must)
		}
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	mode := payload
	switch {
	case strings.HasPrefix(payload, "STREAMING-"):
		return "InvalidRequest", fmt.Errorf("streaming payload %q: its chunk signatures chain from a seed signed over another path", payload)
	case payload == "UNSIGNED-PAYLOAD":
	case len(payload) == 64 && isLowerHex(payload):
		mode = "sha256"
	default:
		return "InvalidArgument", fmt.Errorf("X-Amz-Content-Sha256 %q", payload)
	}
	// The canonical URI is the path as received; a client that escaped it
	// differently from SigV4's rules would be refused by AWS S3.
	if want := sigv4Escape(r.URL.Path, true); rawPath != want {
		return "SignatureDoesNotMatch", fmt.Errorf("path %q is not escaped as SigV4 canonicalizes it (%q)", rawPath, want)
	}
	var ch strings.Builder
	for _, name := range signed {
		var v string
		if name == "host" {
			v = r.Host
		} else {
			vals := r.Header.Values(name)
			if len(vals) == 0 {
				return "SignatureDoesNotMatch", fmt.Errorf("signed header %s missing", name)
			}
			for i, s := range vals {
				vals[i] = strings.Join(strings.Fields(s), " ")
			}
			v = strings.Join(vals, ",")
		}
		ch.WriteString(name + ":" + v + "\n")
	}
	canonical := strings.Join([]string{
		r.Method,
		rawPath,
		sigv4Query(r.URL.RawQuery),
		ch.String(),
		fields["SignedHeaders"],
		payload,
	}, "\n")
	crHash := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + strings.Join(cred[1:], "/") + "\n" + hex.EncodeToString(crHash[:])
	key := []byte("AWS4" + d.secret)
	for _, part := range cred[1:] {
		key = hmacSum(key, part)
	}
	want := hex.EncodeToString(hmacSum(key, toSign))
	if !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return "SignatureDoesNotMatch", errors.New("the request signature we calculated does not match the signature you provided")
	}
	d.mu.Lock()
	d.payloads[r.Method+" "+mode]++
	d.mu.Unlock()
	return "", nil
}

func hmacSum(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// sigv4Escape percent-encodes every byte but A-Z a-z 0-9 - _ . ~ (and "/"
// when keepSlash), with upper-case hex, as SigV4 requires.
func sigv4Escape(s string, keepSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' || keepSlash && c == '/' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// sigv4Query is the canonical query string: each name and value decoded,
// escaped again by SigV4's rules, sorted by name then value.
func sigv4Query(raw string) string {
	type pair struct{ k, v string }
	var pairs []pair
	for _, p := range strings.Split(raw, "&") {
		if p == "" {
			continue
		}
		k, v, _ := strings.Cut(p, "=")
		kd, err1 := url.QueryUnescape(k)
		vd, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return "\x00bad query"
		}
		pairs = append(pairs, pair{sigv4Escape(kd, false), sigv4Escape(vd, false)})
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].k != pairs[j].k {
			return pairs[i].k < pairs[j].k
		}
		return pairs[i].v < pairs[j].v
	})
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p.k + "=" + p.v
	}
	return strings.Join(out, "&")
}

// receive streams r's body into a new file under the double's dir, checking
// a hex X-Amz-Content-Sha256 against it. It answers the error itself and
// returns ok false on failure.
func (d *s3PathDouble) receive(w http.ResponseWriter, r *http.Request) (file string, size int64, etag string, ok bool) {
	f, err := os.CreateTemp(d.dir, "body-*")
	if err != nil {
		d.t.Errorf("s3 path double: %v", err)
		d.fail(w, r, http.StatusInternalServerError, "InternalError", err.Error())
		return "", 0, "", false
	}
	sh, mh := sha256.New(), md5.New()
	size, err = io.Copy(io.MultiWriter(f, sh, mh), r.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		d.fail(w, r, http.StatusBadRequest, "IncompleteBody", err.Error())
		return "", 0, "", false
	}
	if want := r.Header.Get("X-Amz-Content-Sha256"); want != "UNSIGNED-PAYLOAD" && want != hex.EncodeToString(sh.Sum(nil)) {
		_ = os.Remove(f.Name())
		d.mu.Lock()
		d.rejected = append(d.rejected, r.Method+" "+r.URL.Path+": body does not match X-Amz-Content-Sha256")
		d.mu.Unlock()
		d.fail(w, r, http.StatusBadRequest, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
		return "", 0, "", false
	}
	return f.Name(), size, hex.EncodeToString(mh.Sum(nil)), true
}

func (d *s3PathDouble) putObject(w http.ResponseWriter, r *http.Request, key string) {
	if r.Header.Get("X-Amz-Copy-Source") != "" {
		d.t.Errorf("s3 path double: unexpected CopyObject")
	}
	file, size, etag, ok := d.receive(w, r)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.Header.Get("If-None-Match") == "*" && d.objects[key] != nil {
		_ = os.Remove(file)
		d.fail(w, r, http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
		return
	}
	if old := d.objects[key]; old != nil {
		_ = os.Remove(old.file)
	}
	d.objects[key] = &s3dObject{file: file, size: size, modified: time.Now().UTC(), etag: etag}
	w.Header().Set("ETag", `"`+etag+`"`)
	w.WriteHeader(http.StatusOK)
}

func (d *s3PathDouble) createUpload(w http.ResponseWriter, r *http.Request, key string) {
	d.mu.Lock()
	d.seq++
	id := "upload-" + strconv.Itoa(d.seq)
	d.uploads[id] = &s3dUpload{key: key, parts: map[int]s3dPart{}}
	d.mu.Unlock()
	d.reply(w, struct {
		XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
		Bucket   string   `xml:"Bucket"`
		Key      string   `xml:"Key"`
		UploadID string   `xml:"UploadId"`
	}{Bucket: d.bucket, Key: key, UploadID: id})
}

func (d *s3PathDouble) uploadPart(w http.ResponseWriter, r *http.Request, key string, q url.Values) {
	n, err := strconv.Atoi(q.Get("partNumber"))
	if err != nil || n < 1 || n > 10000 {
		d.fail(w, r, http.StatusBadRequest, "InvalidArgument", "bad partNumber")
		return
	}
	file, size, etag, ok := d.receive(w, r)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	u := d.uploads[q.Get("uploadId")]
	if u == nil || u.key != key {
		_ = os.Remove(file)
		d.fail(w, r, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist")
		return
	}
	if old, ok := u.parts[n]; ok {
		_ = os.Remove(old.file)
	}
	u.parts[n] = s3dPart{file: file, size: size, etag: etag}
	w.Header().Set("ETag", `"`+etag+`"`)
	w.WriteHeader(http.StatusOK)
}

func (d *s3PathDouble) complete(w http.ResponseWriter, r *http.Request, key, id string) {
	var req struct {
		Parts []struct {
			PartNumber int    `xml:"PartNumber"`
			ETag       string `xml:"ETag"`
		} `xml:"Part"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = xml.Unmarshal(body, &req)
	}
	if err != nil || len(req.Parts) == 0 {
		d.fail(w, r, http.StatusBadRequest, "MalformedXML", fmt.Sprintf("%v", err))
		return
	}
	if sum := sha256.Sum256(body); r.Header.Get("X-Amz-Content-Sha256") != "UNSIGNED-PAYLOAD" && r.Header.Get("X-Amz-Content-Sha256") != hex.EncodeToString(sum[:]) {
		d.fail(w, r, http.StatusBadRequest, "XAmzContentSHA256Mismatch", "body does not match X-Amz-Content-Sha256")
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	u := d.uploads[id]
	if u == nil || u.key != key {
		d.fail(w, r, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist")
		return
	}
	if r.Header.Get("If-None-Match") == "*" && d.objects[key] != nil {
		d.fail(w, r, http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
		return
	}
	out, err := os.CreateTemp(d.dir, "object-*")
	if err != nil {
		d.fail(w, r, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	defer out.Close()
	sums := md5.New()
	var size int64
	for i, p := range req.Parts {
		part, ok := u.parts[p.PartNumber]
		if !ok || strings.Trim(p.ETag, `"`) != part.etag || (i > 0 && p.PartNumber <= req.Parts[i-1].PartNumber) {
			_ = os.Remove(out.Name())
			d.fail(w, r, http.StatusBadRequest, "InvalidPart", fmt.Sprintf("part %d", p.PartNumber))
			return
		}
		if i < len(req.Parts)-1 && part.size < 5<<20 {
			_ = os.Remove(out.Name())
			d.fail(w, r, http.StatusBadRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.")
			return
		}
		n, err := appendFile(out, part.file, sums, part.etag)
		if err != nil {
			_ = os.Remove(out.Name())
			d.fail(w, r, http.StatusInternalServerError, "InternalError", err.Error())
			return
		}
		size += n
	}
	for _, p := range u.parts {
		_ = os.Remove(p.file)
	}
	delete(d.uploads, id)
	if old := d.objects[key]; old != nil {
		_ = os.Remove(old.file)
	}
	etag := hex.EncodeToString(sums.Sum(nil)) + "-" + strconv.Itoa(len(req.Parts))
	d.objects[key] = &s3dObject{file: out.Name(), size: size, modified: time.Now().UTC(), etag: etag}
	d.reply(w, struct {
		XMLName xml.Name `xml:"CompleteMultipartUploadResult"`
		Bucket  string   `xml:"Bucket"`
		Key     string   `xml:"Key"`
		ETag    string   `xml:"ETag"`
	}{Bucket: d.bucket, Key: key, ETag: `"` + etag + `"`})
}

func appendFile(out *os.File, name string, sums hash.Hash, etag string) (int64, error) {
	in, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	raw, _ := hex.DecodeString(etag)
	sums.Write(raw)
	return io.Copy(out, in)
}

func (d *s3PathDouble) abort(w http.ResponseWriter, r *http.Request, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u := d.uploads[id]
	if u == nil {
		d.fail(w, r, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist")
		return
	}
	for _, p := range u.parts {
		_ = os.Remove(p.file)
	}
	delete(d.uploads, id)
	w.WriteHeader(http.StatusNoContent)
}

func (d *s3PathDouble) get(w http.ResponseWriter, r *http.Request, key string) {
	d.mu.Lock()
	o := d.objects[key]
	var f *os.File
	var err error
	if o != nil {
		f, err = os.Open(o.file) // opened under the lock: a later delete cannot pull it away
	}
	d.mu.Unlock()
	if o == nil {
		d.fail(w, r, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return
	}
	if err != nil {
		d.fail(w, r, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	defer f.Close()
	w.Header().Set("ETag", `"`+o.etag+`"`)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Accept-Ranges", "bytes")
	http.ServeContent(w, r, "", o.modified, f)
}

func (d *s3PathDouble) list(w http.ResponseWriter, r *http.Request, q url.Values) {
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	max := 1000
	if v := q.Get("max-keys"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < max {
			max = n
		}
	}
	after := q.Get("start-after")
	if tok := q.Get("continuation-token"); tok != "" {
		after = tok
	}
	type content struct {
		Key          string `xml:"Key"`
		LastModified string `xml:"LastModified"`
		ETag         string `xml:"ETag"`
		Size         int64  `xml:"Size"`
		StorageClass string `xml:"StorageClass"`
	}
	res := struct {
		XMLName               xml.Name  `xml:"ListBucketResult"`
		Xmlns                 string    `xml:"xmlns,attr"`
		Name                  string    `xml:"Name"`
		Prefix                string    `xml:"Prefix"`
		KeyCount              int       `xml:"KeyCount"`
		MaxKeys               int       `xml:"MaxKeys"`
		IsTruncated           bool      `xml:"IsTruncated"`
		EncodingType          string    `xml:"EncodingType,omitempty"`
		ContinuationToken     string    `xml:"ContinuationToken,omitempty"`
		NextContinuationToken string    `xml:"NextContinuationToken,omitempty"`
		Contents              []content `xml:"Contents"`
		CommonPrefixes        []struct {
			Prefix string `xml:"Prefix"`
		} `xml:"CommonPrefixes"`
	}{Xmlns: "http://s3.amazonaws.com/doc/2006-03-01/", Name: d.bucket, Prefix: prefix, MaxKeys: max,
		EncodingType: q.Get("encoding-type"), ContinuationToken: q.Get("continuation-token")}
	enc := func(s string) string {
		if res.EncodingType == "url" {
			return url.QueryEscape(s)
		}
		return s
	}
	res.Prefix = enc(prefix)
	d.mu.Lock()
	var names []string
	for k := range d.objects {
		if strings.HasPrefix(k, prefix) && k > after {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	last := ""
	for _, k := range names {
		if delim != "" {
			if i := strings.Index(k[len(prefix):], delim); i >= 0 {
				cp := k[:len(prefix)+i+len(delim)]
				if cp == last {
					continue // rolled up into the common prefix already listed
				}
				if len(res.Contents)+len(res.CommonPrefixes) == max {
					res.IsTruncated, res.NextContinuationToken = true, last
					break
				}
				res.CommonPrefixes = append(res.CommonPrefixes, struct {
					Prefix string `xml:"Prefix"`
				}{enc(cp)})
				last = cp
				continue
			}
		}
		if len(res.Contents)+len(res.CommonPrefixes) == max {
			res.IsTruncated, res.NextContinuationToken = true, last
			break
		}
		o := d.objects[k]
		res.Contents = append(res.Contents, content{Key: enc(k), LastModified: o.modified.Format("2006-01-02T15:04:05.000Z"),
			ETag: `"` + o.etag + `"`, Size: o.size, StorageClass: "STANDARD"})
		last = k
	}
	d.mu.Unlock()
	res.KeyCount = len(res.Contents) + len(res.CommonPrefixes)
	d.reply(w, res)
}

// tamperTransport changes requests after pathSigner signed them, to prove
// the double's check is not vacuous. mutate nil passes requests unchanged.
type tamperTransport struct {
	mutate func(r *http.Request)
	next   http.RoundTripper
}

func (t *tamperTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.mutate != nil {
		req = req.Clone(req.Context())
		t.mutate(req)
	}
	return t.next.RoundTrip(req)
}
