package storage

// Tests of s3:// stores whose endpoint has a path, the form of Supabase's
// S3 endpoint: s3://BUCKET/PREFIX?endpoint=https://PROJECT.supabase.co/storage/v1/s3&region=R.
// They run against the protocol double in s3path_double_test.go (no
// Supabase server can run here), which verifies every request's SigV4
// signature over the full path with its own implementation.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"director/errcode"
)

// s3PathEnv is a conformance env on prefix in the double.
func s3PathEnv(t *testing.T, d *s3PathDouble, prefix string) env {
	s := mustOpen(t, d.storeURL(prefix), d.opts())
	return env{store: s, raw: func(t *testing.T) []string {
		var out []string
		for _, k := range d.names() {
			if rest, ok := strings.CutPrefix(k, prefix+"/"); ok {
				out = append(out, rest)
			}
		}
		return out
	}}
}

// checkDoubleClean fails t when the double refused a request of the
// backend or saw one outside its prefix, or when an upload went out without
// the SHA-256 of its body.
func checkDoubleClean(t *testing.T, d *s3PathDouble) {
	t.Helper()
	if r := d.rejections(); len(r) != 0 {
		t.Errorf("the double refused %d requests, e.g. %q", len(r), r[0])
	}
	if o := d.outsidePrefix(); len(o) != 0 {
		t.Errorf("%d requests outside %s, e.g. %q", len(o), s3PathPrefix, o[0])
	}
	modes := d.payloadModes()
	t.Logf("payload modes seen: %v", modes)
	for m, n := range modes {
		if strings.HasPrefix(m, "PUT ") && m != "PUT sha256" {
			t.Errorf("%d upload requests as %q, want every one with the SHA-256 of its body", n, m)
		}
	}
	if modes["PUT sha256"] == 0 {
		t.Error("no signed upload reached the double")
	}
}

// TestS3PathOverTLS: over https minio-go would send UNSIGNED-PAYLOAD; the
// path-prefixed client sends the SHA-256 of each part there too, and a
// multipart upload of unknown size round-trips.
func TestS3PathOverTLS(t *testing.T) {
	d := newS3PathDouble(t, true)
	opts := d.opts()
	opts.PartSize = 5 << 20
	s := mustOpen(t, d.storeURL("tls"), opts)
	if !strings.Contains(s.String(), "endpoint=127.0.0.1:") || !strings.Contains(s.String(), s3PathPrefix+"&") || strings.Contains(s.String(), "insecure") {
		t.Errorf("String() = %q", s.String())
	}
	ctx := context.Background()
	const size = 12 << 20
	for _, announced := range []int64{-1, size} {
		key := "p/big-" + itoa(announced+1)
		h := sha256.New()
		if err := s.Put(ctx, key, io.TeeReader(&genReader{size: size}, h), announced); err != nil {
			t.Fatalf("Put (size %d): %v", announced, err)
		}
		rc, o, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		h2 := sha256.New()
		n, err := io.Copy(h2, rc)
		rc.Close()
		if err != nil || n != size || o.Size != size || !bytes.Equal(h.Sum(nil), h2.Sum(nil)) {
			t.Errorf("read back %d bytes (object says %d), %v; want the %d uploaded", n, o.Size, err, size)
		}
	}
	objs, err := s.List(ctx, "p/")
	if err != nil || !slices.Equal(keys(objs), []string{"p/big-0", "p/big-12582913"}) {
		t.Errorf("List = %q, %v", keys(objs), err)
	}
	if rep := Check(ctx, s); !rep.OK {
		t.Errorf("Check = %+v", rep)
	}
	if got := d.payloadModes()["PUT sha256"]; got < 6 {
		t.Errorf("%d PUTs carried a SHA-256, want at least 6 (3 parts per upload)", got)
	}
	checkDoubleClean(t, d)
}

// TestS3PathDoubleRejectsTampering proves the double's signature check is
// not vacuous: the same call passes untouched and fails when the request is
// changed after signing, when it was signed over the path without the
// prefix (what minio-go alone would do), or with a wrong secret.
func TestS3PathDoubleRejectsTampering(t *testing.T) {
	putObj := func(s Store) error {
		return s.Put(context.Background(), "t/obj", strings.NewReader("some payload"), 12)
	}
	list := func(s Store) error { _, err := s.List(context.Background(), "t/"); return err }
	tests := []struct {
		name       string
		mutate     func(r *http.Request) // applied after pathSigner signed
		noPath     bool                  // sign over the path without the prefix, then add it
		badSecret  bool
		call       func(s Store) error
		wantReason string // "" for the untouched control
		wantCode   errcode.Code
		wantProb   Problem
	}{
		{name: "untouched put", call: putObj},
		{name: "untouched list", call: list},
		{name: "key changed", call: putObj, mutate: func(r *http.Request) {
			if r.Method == http.MethodPut {
				r.URL.Path, r.URL.RawPath = strings.Replace(r.URL.Path, "/obj", "/obk", 1), ""
			}
		}, wantReason: "does not match", wantProb: ProblemCredentials},
		{name: "query changed", call: list, mutate: func(r *http.Request) {
			if q := r.URL.Query(); q.Has("list-type") {
				q.Set("prefix", "case0/")
				r.URL.RawQuery = q.Encode()
			}
		}, wantReason: "does not match", wantProb: ProblemCredentials},
		{name: "signed header changed", call: list, mutate: func(r *http.Request) {
			tm, _ := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
			r.Header.Set("X-Amz-Date", tm.Add(-time.Second).Format("20060102T150405Z"))
		}, wantReason: "does not match", wantProb: ProblemCredentials},
		{name: "body changed", call: putObj, mutate: func(r *http.Request) {
			if r.Method == http.MethodPut {
				r.Body = io.NopCloser(strings.NewReader("SOME PAYLOAD"))
			}
		}, wantReason: "X-Amz-Content-Sha256", wantCode: errcode.StorageUnavailable},
		{name: "streaming payload", call: putObj, mutate: func(r *http.Request) {
			if r.Method == http.MethodPut {
				r.Header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
			}
		}, wantReason: "streaming payload", wantCode: errcode.StorageUnavailable},
		{name: "signed without the prefix", call: list, noPath: true, wantReason: "does not match", wantProb: ProblemCredentials},
		{name: "wrong secret", call: putObj, badSecret: true, wantReason: "does not match", wantProb: ProblemCredentials},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newS3PathDouble(t, false)
			opts := d.opts()
			opts.Retry.Attempts = 1
			if tt.badSecret {
				opts.AWSSecretAccessKey += "x"
			}
			rawURL := d.storeURL("t")
			if tt.noPath {
				// minio-go signs over /BUCKET/KEY; the transport only adds
				// the prefix, as a proxy that rewrites paths would.
				rawURL = "s3://" + d.bucket + "/t?endpoint=" + strings.TrimPrefix(d.srv.URL, "http://") + "&insecure=true&region=" + d.region
				tt.mutate = func(r *http.Request) {
					r.URL.Path = s3PathPrefix + r.URL.Path
					if r.URL.RawPath != "" {
						r.URL.RawPath = s3PathPrefix + r.URL.RawPath
					}
				}
			}
			opts.HTTPClient = &http.Client{Transport: &tamperTransport{mutate: tt.mutate, next: http.DefaultTransport}}
			err := tt.call(mustOpen(t, rawURL, opts))
			rej := d.rejections()
			if tt.wantReason == "" {
				if err != nil || len(rej) != 0 {
					t.Fatalf("untouched call = %v, rejections %q", err, rej)
				}
				return
			}
			if err == nil {
				t.Fatal("tampered call succeeded")
			}
			if len(rej) == 0 || !strings.Contains(rej[0], tt.wantReason) {
				t.Errorf("rejections %q, want one saying %q", rej, tt.wantReason)
			}
			if tt.wantProb != "" && ProblemOf(err) != tt.wantProb {
				t.Errorf("error %v: problem %q, want %q", err, ProblemOf(err), tt.wantProb)
			}
			if tt.wantCode != "" && errcode.Of(err) != tt.wantCode {
				t.Errorf("error %v: code %s, want %s", err, errcode.Of(err), tt.wantCode)
			}
			if left := d.names(); len(left) != 0 {
				t.Errorf("left after a refused call: %q", left)
			}
		})
	}
}

// TestS3PathHints: hints name the endpoint with its path, and a missing
// bucket on Supabase's endpoint points at the dashboard.
func TestS3PathHints(t *testing.T) {
	d := newS3PathDouble(t, false)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	tests := []struct {
		name    string
		url     string
		want    Problem
		hintHas []string
	}{
		{"missing bucket", "s3://no-such-bucket?endpoint=" + d.srv.URL + s3PathPrefix + "&region=" + d.region, ProblemNoBucket,
			[]string{"--endpoint-url " + d.srv.URL + s3PathPrefix, "Supabase dashboard"}},
		{"closed port", "s3://bkt?endpoint=http://" + closed + s3PathPrefix + "&region=" + d.region, ProblemUnreachable,
			[]string{"http://" + closed + s3PathPrefix}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := d.opts()
			opts.Retry.Attempts = 1
			rep := Check(context.Background(), mustOpen(t, tt.url, opts))
			if rep.OK || rep.Problem != tt.want {
				t.Fatalf("Check = %+v, want problem %s", rep, tt.want)
			}
			for _, h := range tt.hintHas {
				if !strings.Contains(rep.Hint, h) {
					t.Errorf("hint %q lacks %q", rep.Hint, h)
				}
			}
		})
	}
	if r := d.rejections(); len(r) != 0 {
		t.Errorf("rejections %q", r)
	}
}

// recordingTransport remembers the requests it is given.
type recordingTransport struct{ got []*http.Request }

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.got = append(rt.got, r)
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestPathSignerRefusesChainedPayloads: payload modes whose chunk or trailer
// signatures chain from the seed signature, and presigned requests, never
// leave the client; an ordinary request goes below the prefix, signed anew.
func TestPathSignerRefusesChainedPayloads(t *testing.T) {
	tests := []struct {
		name    string
		sha     string
		trailer bool
		query   string
		wantErr bool
	}{
		{"unsigned payload", "UNSIGNED-PAYLOAD", false, "", false},
		{"body sha256", strings.Repeat("ab", 32), false, "partNumber=1&uploadId=x", false},
		{"streaming signed", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", false, "", true},
		{"streaming signed trailer", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", false, "", true},
		{"unsigned trailer", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", true, "", true},
		{"trailer only", "UNSIGNED-PAYLOAD", true, "", true},
		{"presigned", "", false, "X-Amz-Signature=abc&X-Amz-Credential=k", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingTransport{}
			p := &pathSigner{prefix: s3PathPrefix, accessKey: "AK", secretKey: "SK", region: "eu-west-2", next: rec}
			body := &closeCounter{Reader: strings.NewReader("body")}
			req, err := http.NewRequest(http.MethodPut, "https://abc.supabase.co/bkt/a%20b?"+tt.query, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Amz-Content-Sha256", tt.sha)
			req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AK/20260101/eu-west-2/s3/aws4_request, SignedHeaders=host, Signature=old")
			if tt.trailer {
				req.Trailer = http.Header{"X-Amz-Checksum-Crc32c": nil}
			}
			resp, err := p.RoundTrip(req)
			if tt.wantErr {
				if err == nil || len(rec.got) != 0 || errcode.Of(err) != errcode.Internal || errcode.HintOf(err) == "" {
					t.Fatalf("RoundTrip = %v, %v (%d sent); want an internal error with a hint and nothing sent", resp, err, len(rec.got))
				}
				if body.closed == 0 {
					t.Error("the request body was not closed")
				}
				if tt.sha != "" && !errors.Is(err, errChainedPayload) {
					t.Errorf("error %v does not wrap errChainedPayload", err)
				}
				return
			}
			if err != nil || len(rec.got) != 1 {
				t.Fatalf("RoundTrip = %v (%d sent)", err, len(rec.got))
			}
			got := rec.got[0]
			if got.URL.EscapedPath() != s3PathPrefix+"/bkt/a%20b" || got.URL.Host != "abc.supabase.co" {
				t.Errorf("sent to %s", got.URL)
			}
			if req.URL.Path != "/bkt/a b" || req.Header.Get("Authorization") == got.Header.Get("Authorization") {
				t.Error("the caller's request was changed, or the signature was not renewed")
			}
			auth := got.Header.Get("Authorization")
			if !strings.Contains(auth, "Credential=AK/") || !strings.Contains(auth, "/eu-west-2/s3/aws4_request") || strings.Contains(auth, "Signature=old") {
				t.Errorf("Authorization %q", auth)
			}
			if got.Header.Get("X-Amz-Content-Sha256") != tt.sha {
				t.Errorf("X-Amz-Content-Sha256 = %q, want %q kept", got.Header.Get("X-Amz-Content-Sha256"), tt.sha)
			}
			if q, _ := url.ParseQuery(got.URL.RawQuery); q.Encode() != mustQuery(t, tt.query).Encode() {
				t.Errorf("query %q, want %q", got.URL.RawQuery, tt.query)
			}
		})
	}
}

func mustQuery(t *testing.T, s string) url.Values {
	q, err := url.ParseQuery(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
