package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"director/errcode"
)

// s3Store keeps objects in an S3-compatible bucket through minio-go/v7.
//
//   - Uploads stream: one part of Options.PartSize is buffered at a time,
//     so each request can be retried by minio-go; a body larger than one
//     part becomes a multipart upload, aborted on failure with a fresh
//     bounded context (see Put).
//   - New objects are written with If-None-Match: * (on the single PUT and
//     on CompleteMultipartUpload), so two machines never replace each
//     other's archive where the server supports conditional writes (AWS S3
//     since 2024, MinIO, R2; versitygw v1.8.0 on PUT only). A Stat before
//     the upload refuses existing keys early everywhere, and another one
//     right before a multipart completion narrows the race on servers that
//     ignore the header to one request's time. director's keys carry a
//     random suffix, which makes that race moot in practice.
//   - Custom endpoints use path-style addressing; AWS uses the default.
//   - An endpoint may have a path, as Supabase's S3 endpoint has
//     (https://PROJECT.supabase.co/storage/v1/s3): requests then go through
//     pathSigner (s3path.go) and every upload request carries the SHA-256 of
//     its in-memory body.
type s3Store struct {
	bucket   string
	prefix   string // "" or "a/b" without slashes at either end
	endpoint string // host:port
	path     string // "" or the endpoint's path, e.g. "/storage/v1/s3"
	secure   bool
	region   string
	meta     *minio.Client // MaxRetries 1: metadata calls are retried by Options.Retry with per-call deadlines
	put      *minio.Client // minio-go retries each part request itself; parts are in-memory buffers
	opts     Options
	// sweepGrace is how old an incomplete multipart upload must be for
	// Sweep to abort it (s3SweepGrace; tests shorten it).
	sweepGrace time.Duration
}

// s3SweepGrace: an incomplete multipart upload younger than this may be a
// live Put, perhaps another machine's, and Sweep leaves it. A Put sends its
// parts one after another, each within the idle timeout, and even a 500 MB
// archive at 150 kB/s is up within the hour.
const s3SweepGrace = time.Hour

func openS3(rawURL string, opts Options) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, badURL(rawURL, "%v", parseErr(rawURL, err))
	}
	if u.User != nil {
		return nil, badURL(rawURL, "credentials do not belong in the URL").WithHint("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --aws-access-key-id and --aws-secret-access-key)")
	}
	if u.Fragment != "" {
		return nil, badURL(rawURL, "unexpected #fragment")
	}
	if strings.Contains(u.Host, ":") {
		// KEY:SECRET/…@bucket: a secret holding a "/" makes url.Parse
		// take the key and the secret's start for the bucket, which the
		// store's name would then show.
		return nil, badURL(rawURL, "%s", colonInBucket).WithHint("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --aws-access-key-id and --aws-secret-access-key), and give an endpoint as ?endpoint=host:port")
	}
	s := &s3Store{bucket: u.Host, prefix: strings.Trim(u.Path, "/"), region: "us-east-1", secure: true, opts: opts, sweepGrace: s3SweepGrace}
	if s.bucket == "" {
		return nil, badURL(rawURL, "no bucket: use s3://BUCKET[/PREFIX]")
	}
	if err := s3utils.CheckValidBucketName(s.bucket); err != nil {
		return nil, badURL(rawURL, "bucket %q: %v", s.bucket, err)
	}
	if s.prefix != "" {
		if err := validatePrefix(s.prefix + "/"); err != nil {
			return nil, badURL(rawURL, "prefix %q: %v", s.prefix, err)
		}
	}
	lookup := minio.BucketLookupAuto
	// ParseQuery, not u.Query(), which drops what it cannot read: a
	// "&" typed as ";" or a bad %-escape lost the endpoint, and the store
	// became AWS's, over plain http with insecure=true.
	if credentialsEnd(u.RawQuery) >= 0 {
		// Before the parameters are read and named: a password holding
		// a "&" would make a piece of it a parameter's name.
		return nil, badURL(rawURL, "a parameter holds an \"@\": credentials do not belong in the URL").
			WithHint("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --aws-access-key-id and --aws-secret-access-key), and give the endpoint as host:port or https://host:port/path")
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, badURL(rawURL, "the parameters after \"?\" do not read as name=value pairs joined by \"&\" (a \";\" or a bad %%-escape?)")
	}
	for k, vs := range query {
		v := ""
		if len(vs) > 0 {
			v = vs[len(vs)-1]
		}
		switch k {
		case "endpoint":
			s.endpoint = v
		case "region":
			s.region = v
		case "insecure":
			switch v {
			case "true", "1", "":
				s.secure = false
			case "false", "0":
			default:
				return nil, badURL(rawURL, "insecure=%q: use true or false", v)
			}
		default:
			return nil, badURL(rawURL, "unknown parameter %q (known: endpoint, region, insecure)", k)
		}
	}
	if s.endpoint == "" {
		s.endpoint = "s3.amazonaws.com"
	} else {
		lookup = minio.BucketLookupPath
		if scheme, hostport, ok := strings.Cut(s.endpoint, "://"); ok {
			switch scheme {
			case "http":
				s.secure = false
			case "https":
			default:
				return nil, badURL(rawURL, "endpoint scheme %q: use host:port, http://host:port or https://host:port", scheme)
			}
			s.endpoint = hostport
		}
		if credentialsEnd(s.endpoint) >= 0 {
			// Before the path is quoted: an unescaped secret holding a "/"
			// would be quoted as a path.
			return nil, badURL(rawURL, "credentials do not belong in the endpoint").
				WithHint("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --aws-access-key-id and --aws-secret-access-key), and give the endpoint as host:port or https://host:port/path")
		}
		host, path, _ := strings.Cut(s.endpoint, "/")
		if host == "" || strings.ContainsAny(host, "?#") {
			return nil, badURL(rawURL, "endpoint %q: use host:port or host:port/path", redactEndpoint(s.endpoint))
		}
		if path = strings.TrimSuffix(path, "/"); path != "" {
			if err := checkEndpointPath(path); err != nil {
				return nil, badURL(rawURL, "endpoint path %q: %v", path, err).
					WithHint("use endpoint=https://HOST/PATH, e.g. endpoint=https://PROJECT.supabase.co/storage/v1/s3&region=REGION for Supabase's S3 endpoint")
			}
			s.path = "/" + path
		}
		s.endpoint = host
	}
	if opts.AWSAccessKeyID == "" || opts.AWSSecretAccessKey == "" {
		return nil, errcode.New(errcode.InvalidInput, "no S3 credentials for %s", s).
			WithHint("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --aws-access-key-id and --aws-secret-access-key)")
	}
	transport := opts.HTTPClient.Transport
	if s.path != "" {
		next := transport
		if next == nil {
			next = http.DefaultTransport
		}
		transport = &pathSigner{prefix: s.path, accessKey: opts.AWSAccessKeyID, secretKey: opts.AWSSecretAccessKey, region: s.region, next: next}
	}
	mk := func(retries int) (*minio.Client, error) {
		return minio.New(s.endpoint, &minio.Options{
			Creds:        credentials.NewStaticV4(opts.AWSAccessKeyID, opts.AWSSecretAccessKey, ""),
			Secure:       s.secure,
			Transport:    transport,
			Region:       s.region,
			BucketLookup: lookup,
			MaxRetries:   retries,
		})
	}
	if s.meta, err = mk(1); err != nil {
		return nil, badURL(rawURL, "%v", err)
	}
	if s.put, err = mk(opts.Retry.Attempts); err != nil {
		return nil, badURL(rawURL, "%v", err)
	}
	return s, nil
}

// String is the store URL without credentials.
func (s *s3Store) String() string {
	u := "s3://" + s.bucket
	if s.prefix != "" {
		u += "/" + s.prefix
	}
	return u + s.query()
}

// Location is the URL of an object: the key joins the path, before the
// query that names the endpoint.
func (s *s3Store) Location(key string) string {
	return "s3://" + s.bucket + "/" + s.full(key) + s.query()
}

// query is the part of the store URL from "?" on, or "".
func (s *s3Store) query() string {
	if s.endpoint == "s3.amazonaws.com" {
		if s.region != "us-east-1" {
			return "?region=" + url.QueryEscape(s.region)
		}
		return ""
	}
	q := "?endpoint=" + s.endpoint + s.path
	if s.region != "us-east-1" {
		q += "&region=" + url.QueryEscape(s.region)
	}
	if !s.secure {
		q += "&insecure=true"
	}
	return q
}

func (s *s3Store) full(key string) string {
	if s.prefix == "" {
		return key
	}
	return s.prefix + "/" + key
}

func (s *s3Store) endpointURL() string {
	if s.secure {
		return "https://" + s.endpoint + s.path
	}
	return "http://" + s.endpoint + s.path
}

// classify turns a minio-go error into the coded error of the call what.
func (s *s3Store) classify(ctx context.Context, what string, err error) error {
	if cerr := ctxErr(ctx, s, what); cerr != nil {
		return cerr
	}
	if derr := deadlineErr(s, what, err); derr != nil {
		return derr
	}
	resp := minio.ToErrorResponse(err)
	if resp.Region != "" && resp.Region != s.region && resp.StatusCode != http.StatusNotFound {
		// The server names the bucket's region (AuthorizationHeaderMalformed,
		// or a redirect to another region): the URL's is wrong, and no key
		// or retry helps. Not for a 404: an answer about a missing object
		// is that, whatever region header a server adds to it.
		return fail(s, what, ProblemRegion, false,
			fmt.Sprintf("bucket %s is in region %s, not %s: set region=%s in the store URL", s.bucket, resp.Region, s.region, resp.Region), err)
	}
	switch resp.Code {
	case "NoSuchKey", "NotFound":
		return fail(s, what, ProblemNotFound, false, "", err)
	case "NoSuchBucket":
		return s.noBucket(what, err)
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "ExpiredToken",
		"InvalidSecurity", "AuthorizationHeaderMalformed", "AllAccessDisabled", "AccountProblem",
		"XAdminUserNotFound", "InvalidArgument.AccessKey":
		return fail(s, what, ProblemCredentials, false,
			fmt.Sprintf("the server refused the credentials (%s): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --aws-access-key-id and --aws-secret-access-key) and that the key may read and write bucket %s", resp.Code, s.bucket), err)
	case "RequestTimeTooSkewed":
		return fail(s, what, ProblemClockSkew, false, "", err)
	case "PreconditionFailed", "ConditionalRequestConflict":
		return fail(s, what, ProblemExists, false,
			"objects are never overwritten; retry to get a new snapshot name, or delete the old object first", err)
	case "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "XMinioServerNotInitialized":
		return fail(s, what, ProblemServer, true, "", err)
	}
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return fail(s, what, ProblemServer, true, "", err)
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized:
		return fail(s, what, ProblemCredentials, false, "", err)
	case resp.StatusCode != 0:
		return fail(s, what, "", false, "", err)
	}
	if p, transient, ok := netProblem(err); ok {
		hint := ""
		if p == ProblemUnreachable {
			hint = fmt.Sprintf("cannot reach %s: check endpoint=HOST:PORT[/PATH] in the store URL and that the server is up", s.endpointURL())
			if s.secure {
				hint += "; add insecure=true for a plain-http endpoint"
			}
		}
		return fail(s, what, p, transient, hint, err)
	}
	return fail(s, what, "", false, "", err)
}

func (s *s3Store) noBucket(what string, err error) error {
	mb := fmt.Sprintf("aws s3 mb s3://%s --endpoint-url %s", s.bucket, s.endpointURL())
	if s.endpoint == "s3.amazonaws.com" {
		mb = fmt.Sprintf("aws s3 mb s3://%s --region %s", s.bucket, s.region)
	}
	other := fmt.Sprintf("mc mb ALIAS/%s", s.bucket)
	if strings.HasSuffix(s.path, "/storage/v1/s3") {
		other = "Storage, New bucket, in the Supabase dashboard"
	}
	return fail(s, what, ProblemNoBucket, false,
		fmt.Sprintf("bucket %q does not exist; create it first, e.g.: %s (or: %s)", s.bucket, mb, other), err)
}

// explainHead re-asks with a one-key listing when HEAD failed with 404 or
// 403: a HEAD answer has no body, so minio-go guesses NoSuchKey or
// AccessDenied from the status alone, which hides a missing bucket, an
// unknown access key (versitygw answers 404) or clock skew (403). The
// listing has a body with the real error code.
func (s *s3Store) explainHead(ctx context.Context, key, what string, headErr error) error {
	lctx, cancel := withCallTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	for o := range s.meta.ListObjects(lctx, s.bucket, minio.ListObjectsOptions{Prefix: s.full(key), MaxKeys: 1}) {
		if o.Err != nil {
			return s.classify(ctx, what, o.Err)
		}
		break
	}
	if errors.Is(headErr, ErrNotFound) {
		return notFound(s, key)
	}
	return headErr
}

func (s *s3Store) Stat(ctx context.Context, key string) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return Object{}, err
	}
	what := fmt.Sprintf("stat %q", key)
	var obj Object
	err := s.opts.Retry.do(ctx, s.opts.Log, what, s.opts.CallTimeout, func(ctx context.Context) error {
		info, err := s.meta.StatObject(ctx, s.bucket, s.full(key), minio.StatObjectOptions{})
		if err != nil {
			return s.classify(ctx, what, err)
		}
		obj = Object{Key: key, Size: info.Size, Modified: info.LastModified.UTC()}
		return nil
	})
	// A HEAD answer has no body to say why: a listing's does (a 400 is
	// the wrong region, on versitygw and AWS alike).
	if p := ProblemOf(err); p == ProblemNotFound || p == ProblemCredentials || badRequest(err) {
		return Object{}, s.explainHead(ctx, key, what, err)
	}
	return obj, err
}

// badRequest says whether err holds an S3 answer of 400 Bad Request.
func badRequest(err error) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && er.StatusCode == http.StatusBadRequest
}

func (s *s3Store) Get(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, Object{}, err
	}
	what := fmt.Sprintf("get %q", key)
	var g *getReader
	// Opening, up to the response headers, is bounded by CallTimeout per
	// attempt and retried; the body then streams under the caller's ctx
	// with no overall deadline (the object may be large), bounded by
	// IdleTimeout between bytes (watchTransport).
	err := s.opts.Retry.do(ctx, s.opts.Log, what, 0, func(_ context.Context) error {
		rctx, cancel, opened := openCtx(ctx, s.opts.CallTimeout)
		body, info, _, err := minio.Core{Client: s.meta}.GetObject(rctx, s.bucket, s.full(key), minio.GetObjectOptions{})
		if !opened() {
			err = &callTimeoutError{s.opts.CallTimeout}
		}
		if err != nil {
			if body != nil {
				body.Close()
			}
			cerr := s.classify(rctx, what, err)
			cancel()
			return cerr
		}
		g = &getReader{rc: body, ctx: rctx, cancel: cancel, store: s, key: key, size: info.Size}
		g.obj = Object{Key: key, Size: info.Size, Modified: info.LastModified.UTC()}
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

func (s *s3Store) List(ctx context.Context, prefix string) ([]Object, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("list %q", prefix)
	var objs []Object
	err := s.opts.Retry.do(ctx, s.opts.Log, what, s.opts.CallTimeout, func(ctx context.Context) error {
		objs = []Object{}
		full := s.full(prefix)
		if s.prefix != "" && prefix == "" {
			full = s.prefix + "/"
		}
		for o := range s.meta.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: full, Recursive: true}) {
			if o.Err != nil {
				return s.classify(ctx, what, o.Err)
			}
			key := o.Key
			if s.prefix != "" {
				key = strings.TrimPrefix(key, s.prefix+"/")
			}
			if strings.HasSuffix(key, "/") {
				continue // a folder marker, not an object
			}
			objs = append(objs, Object{Key: key, Size: o.Size, Modified: o.LastModified.UTC()})
		}
		return ctxErr(ctx, s, what)
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	return objs, nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	what := fmt.Sprintf("delete %q", key)
	err := s.opts.Retry.do(ctx, s.opts.Log, what, s.opts.CallTimeout, func(ctx context.Context) error {
		if err := s.meta.RemoveObject(ctx, s.bucket, s.full(key), minio.RemoveObjectOptions{}); err != nil {
			return s.classify(ctx, what, err)
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Put uploads r. A body that fits in one part (PartSize) is read into
// memory and sent as one conditional PUT; a larger one goes up as a
// multipart upload of PartSize parts, one buffered at a time. Every request
// then has an in-memory, replayable body, so minio-go retries each one on
// transient failures (Options.Retry.Attempts tries) whatever r is, and a
// failure that outlasts the retries aborts the upload.
//
// Just before the single PUT or the completion of a multipart upload Put
// checks the key again, and the request carries If-None-Match: *.
// versitygw v1.8.0 honours that header on PUT but not on
// CompleteMultipartUpload (see TestS3ServerHonoursIfNoneMatch), so there the
// last check narrows the race between two writers of one key to the time of
// one request.
func (s *s3Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkNewKey(ctx, s, key); err != nil {
		return err
	}
	what := fmt.Sprintf("put %q", key)
	// A request that stalls (IdleTimeout) ends ctx, so that minio-go does
	// not retry it: a store that stopped reading is down or hung.
	ctx, stop := abortOnStall(ctx)
	defer stop()
	body := newBody(ctxReader{ctx, r}, size)
	partSize := int64(s.opts.PartSize)
	if size >= 0 && size < partSize {
		partSize = size
	}
	buf := make([]byte, partSize)
	n, rerr := io.ReadFull(body, buf)
	if err := s.putFailure(ctx, key, what, body, rerr); err != nil {
		return err
	}
	popts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	popts.SetMatchETagExcept("*")
	core := minio.Core{Client: s.put}
	if size >= 0 && int64(n) == size {
		// Make sure the body ends where announced.
		var probe [1]byte
		var m int
		var err error
		for try := 0; m == 0 && err == nil && try < 100; try++ {
			m, err = body.Read(probe[:])
		}
		if err != io.EOF {
			if err == nil {
				err = errSizeMismatch
			}
			if ferr := s.putFailure(ctx, key, what, body, err); ferr != nil {
				return ferr
			}
		}
	}
	if rerr != nil || (size >= 0 && int64(n) == size) {
		// The whole body is in buf: one conditional PUT, after a last
		// check. A server that refuses the PUT on If-None-Match may answer
		// before it has read the body and close the connection, which the
		// client sees as a reset, not as the refusal; the check turns the
		// common case (the key appeared while r was being read) into
		// ErrExists before any byte is sent.
		if err := s.lastCheck(ctx, key, what); err != nil {
			return err
		}
		one, sha := s.signedPayload(popts, buf[:n])
		_, err := core.PutObject(ctx, s.bucket, s.full(key), bytes.NewReader(buf[:n]), int64(n), "", sha, one)
		if err != nil {
			return interrupted(s.classify(ctx, what, err))
		}
		return nil
	}
	return interrupted(s.putMultipart(ctx, key, what, body, buf, popts))
}

// interrupted adds what a user needs after an upload failed for a transient
// reason, when the retries of every request ran out.
func interrupted(err error) error {
	if !isTransient(err) {
		return err
	}
	return errcode.Hinted(err, errcode.StorageUnavailable,
		errcode.HintOf(err)+"; the upload was abandoned and left no object: run the command again once the store is back (`director store check` tells when)",
		"upload interrupted")
}

func (s *s3Store) putMultipart(ctx context.Context, key, what string, body *bodyReader, buf []byte, popts minio.PutObjectOptions) (err error) {
	core := minio.Core{Client: s.put}
	full := s.full(key)
	nctx, cancel := withCallTimeout(ctx, s.opts.CallTimeout)
	uploadID, err := core.NewMultipartUpload(nctx, s.bucket, full, popts)
	if err != nil {
		err = s.classify(nctx, what, err)
		cancel()
		return err
	}
	cancel()
	defer func() {
		if err != nil {
			s.abort(ctx, key, uploadID)
		}
	}()
	var parts []minio.CompletePart
	n := len(buf) // the first part is already in buf
	for part := 1; ; part++ {
		_, sha := s.signedPayload(popts, buf[:n])
		p, err := core.PutObjectPart(ctx, s.bucket, full, uploadID, part, bytes.NewReader(buf[:n]), int64(n),
			minio.PutObjectPartOptions{Sha256Hex: sha, DisableContentSha256: sha != ""})
		if err != nil {
			return s.classify(ctx, what, fmt.Errorf("part %d: %w", part, err))
		}
		parts = append(parts, minio.CompletePart{PartNumber: part, ETag: p.ETag})
		var rerr error
		n, rerr = io.ReadFull(body, buf)
		if err := s.putFailure(ctx, key, what, body, rerr); err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	// Last check before the object appears; see Put.
	if err := s.lastCheck(ctx, key, what); err != nil {
		return err
	}
	// No CallTimeout here: assembling a large object may take long (AWS
	// answers at once and keeps its body moving while it works); the wait
	// for an answer is bounded by IdleTimeout.
	if _, err := core.CompleteMultipartUpload(ctx, s.bucket, full, uploadID, parts, popts); err != nil {
		return s.classify(ctx, what, err)
	}
	return nil
}

// lastCheck is Put's check, right before an object appears, that the key is
// still free: ErrExists when it is taken, the error when the check ran out
// of time or was cancelled, and nil otherwise (other failures leave the
// decision to the conditional request that follows).
func (s *s3Store) lastCheck(ctx context.Context, key, what string) error {
	sctx, cancel := withCallTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	_, err := s.meta.StatObject(sctx, s.bucket, s.full(key), minio.StatObjectOptions{})
	if err == nil {
		return exists(s, key)
	}
	if cerr := ctxErr(sctx, s, what); cerr != nil {
		return cerr
	}
	return deadlineErr(s, what, err)
}

// putFailure turns a failed read of the body into the error to return:
// the caller's cancellation, the body's own error (e.g. MaxSize's), or nil
// when the read merely reached the end.
func (s *s3Store) putFailure(ctx context.Context, key, what string, body *bodyReader, rerr error) error {
	if rerr == nil || rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
		return nil
	}
	if err := ctxErr(ctx, s, what); err != nil {
		return err
	}
	if err := body.bodyFailure(s, key); err != nil {
		return err
	}
	return errcode.Wrap(rerr, errcode.Internal, "%s: %s: reading the upload", s, what)
}

// Sweep aborts the multipart uploads under prefix ("NAME/") that Puts
// killed midway left behind and that are older than the grace period
// (s3SweepGrace). S3 keeps and bills their parts, a whole archive,
// until someone aborts them. No List or Get shows them. Without this, a
// bucket lifecycle rule (AbortIncompleteMultipartUpload) is the only thing
// that removes them. It implements Sweeper.
func (s *s3Store) Sweep(ctx context.Context, prefix string) error {
	if !strings.HasSuffix(prefix, "/") {
		return badKey(prefix, "a folder prefix ends with a slash")
	}
	if err := validatePrefix(prefix); err != nil {
		return err
	}
	what := fmt.Sprintf("sweep %q", prefix)
	type upload struct {
		key, id string
		started time.Time
	}
	var stale []upload
	var cannot error
	err := s.opts.Retry.do(ctx, s.opts.Log, what, s.opts.CallTimeout, func(ctx context.Context) error {
		stale, cannot = stale[:0], nil
		for u := range s.meta.ListIncompleteUploads(ctx, s.bucket, s.full(prefix), true) {
			if u.Err != nil {
				if sweepRefused(u.Err) {
					cannot = u.Err
					return nil
				}
				return s.classify(ctx, what, u.Err)
			}
			// A server that does not say when an upload began (S3 always
			// does) gets no upload aborted: it may be live.
			if !u.Initiated.IsZero() && time.Since(u.Initiated) >= s.sweepGrace {
				stale = append(stale, upload{u.Key, u.UploadID, u.Initiated})
			}
		}
		return ctxErr(ctx, s, what)
	})
	if err != nil {
		return err
	}
	core := minio.Core{Client: s.meta}
	for _, u := range stale { // empty when the listing was refused
		err := s.opts.Retry.do(ctx, s.opts.Log, what, s.opts.CallTimeout, func(ctx context.Context) error {
			if err := core.AbortMultipartUpload(ctx, s.bucket, u.key, u.id); err != nil {
				if sweepRefused(err) {
					cannot = err
					return nil
				}
				return s.classify(ctx, what, err)
			}
			return nil
		})
		if err != nil && !errors.Is(err, ErrNotFound) { // gone already
			return err
		}
		if cannot != nil {
			break
		}
		s.opts.Log.Info("aborted an upload that a killed Put left", "store", s.String(),
			"key", strings.TrimPrefix(u.key, s.prefix+"/"), "started", u.started.UTC().Format(time.RFC3339))
	}
	if cannot != nil {
		// The rest of the work (deleting the objects) went through with
		// these credentials: the key lacks only these permissions, or the
		// server the calls. That is no reason to fail what called Sweep.
		s.opts.Log.Warn("cannot remove the uploads that killed snapshots left: a bucket lifecycle rule (AbortIncompleteMultipartUpload) removes them",
			"store", s.String(), "prefix", prefix, "hint", "give the key s3:ListBucketMultipartUploads and s3:AbortMultipartUpload", "err", cannot)
	}
	return nil
}

// sweepRefused reports whether a multipart listing or abort failed because
// the key may not make it (403) or the server does not implement it (501).
func sweepRefused(err error) bool {
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "AccessDenied" || resp.Code == "NotImplemented":
		return true
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotImplemented:
		return true
	}
	return false
}

// abort removes a failed multipart upload, with a fresh context so that a
// cancelled Put still cleans up, bounded by CallTimeout. If the server is
// unreachable the parts stay (they are no object: List and Get never show
// them); a bucket lifecycle rule AbortIncompleteMultipartUpload removes them.
func (s *s3Store) abort(ctx context.Context, key, uploadID string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.CallTimeout)
	defer cancel()
	core := minio.Core{Client: s.put} // retries, in case the server is only blinking
	if err := core.AbortMultipartUpload(cctx, s.bucket, s.full(key), uploadID); err != nil {
		s.opts.Log.Warn("could not abort the failed upload; its parts stay until a bucket lifecycle rule (AbortIncompleteMultipartUpload) removes them",
			"store", s.String(), "key", key, "upload_id", uploadID, "err", err)
	}
}

// signedPayload returns the options and SHA-256 (hex) of an upload request
// whose body is b. On an endpoint with a path the request must be signable
// in one piece (see s3path.go): minio-go then sends the body's SHA-256 as
// X-Amz-Content-Sha256 instead of streaming chunk signatures (plain http) or
// UNSIGNED-PAYLOAD (https). Elsewhere minio-go keeps its defaults and the
// returned SHA-256 is "".
func (s *s3Store) signedPayload(popts minio.PutObjectOptions, b []byte) (minio.PutObjectOptions, string) {
	if s.path == "" {
		return popts, ""
	}
	sum := sha256.Sum256(b)
	popts.DisableContentSha256 = true
	return popts, hex.EncodeToString(sum[:])
}
