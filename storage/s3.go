package storage

import (
	"context"
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
//   - Uploads stream: one part of Options.PartSize is buffered at a time
//     (NumThreads 1, and the body's Seek/ReadAt are hidden from minio-go so
//     it never picks its buffer-per-thread paths); an unknown size becomes a
//     multipart upload. A failed upload is aborted, and pending multipart
//     uploads of the key are removed, with a fresh bounded context.
//   - New objects are written with If-None-Match: * (on the single PUT and
//     on CompleteMultipartUpload), so two machines never replace each
//     other's archive where the server supports conditional writes (AWS S3
//     since 2024, MinIO, R2, versitygw). A Stat before the upload refuses
//     existing keys early everywhere; on a server that ignores the header
//     only that check remains, and two writers racing on one key between
//     the Stat and the end of the upload could still overwrite each other.
//     director's keys carry a random suffix, which makes that race moot.
//   - Custom endpoints use path-style addressing; AWS uses the default.
type s3Store struct {
	bucket   string
	prefix   string // "" or "a/b" without slashes at either end
	endpoint string // host:port
	secure   bool
	region   string
	meta     *minio.Client // MaxRetries 1: metadata calls are retried by Options.Retry with per-call deadlines
	put      *minio.Client // minio-go retries each part request itself; parts are in-memory buffers
	opts     Options
}

func openS3(rawURL string, opts Options) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, badURL(rawURL, "%v", err)
	}
	if u.User != nil {
		return nil, badURL(rawURL, "credentials do not belong in the URL").WithHint("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --aws-access-key-id and --aws-secret-access-key)")
	}
	if u.Fragment != "" {
		return nil, badURL(rawURL, "unexpected #fragment")
	}
	s := &s3Store{bucket: u.Host, prefix: strings.Trim(u.Path, "/"), region: "us-east-1", secure: true, opts: opts}
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
	for k, vs := range u.Query() {
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
			s.endpoint = strings.TrimSuffix(hostport, "/")
		}
		if s.endpoint == "" || strings.ContainsAny(s.endpoint, "/?#@") {
			return nil, badURL(rawURL, "endpoint %q: use host:port", s.endpoint)
		}
	}
	if opts.AWSAccessKeyID == "" || opts.AWSSecretAccessKey == "" {
		return nil, errcode.New(errcode.InvalidInput, "no S3 credentials for %s", s).
			WithHint("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --aws-access-key-id and --aws-secret-access-key)")
	}
	mk := func(retries int) (*minio.Client, error) {
		return minio.New(s.endpoint, &minio.Options{
			Creds:        credentials.NewStaticV4(opts.AWSAccessKeyID, opts.AWSSecretAccessKey, ""),
			Secure:       s.secure,
			Transport:    opts.HTTPClient.Transport,
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
	if s.endpoint == "s3.amazonaws.com" {
		if s.region != "us-east-1" {
			u += "?region=" + url.QueryEscape(s.region)
		}
		return u
	}
	q := "?endpoint=" + s.endpoint
	if s.region != "us-east-1" {
		q += "&region=" + url.QueryEscape(s.region)
	}
	if !s.secure {
		q += "&insecure=true"
	}
	return u + q
}

func (s *s3Store) full(key string) string {
	if s.prefix == "" {
		return key
	}
	return s.prefix + "/" + key
}

func (s *s3Store) endpointURL() string {
	if s.secure {
		return "https://" + s.endpoint
	}
	return "http://" + s.endpoint
}

// classify turns a minio-go error into the coded error of the call what.
func (s *s3Store) classify(ctx context.Context, what string, err error) error {
	if cerr := ctxErr(ctx, s, what); cerr != nil {
		return cerr
	}
	resp := minio.ToErrorResponse(err)
	switch resp.Code {
	case "NoSuchKey", "NotFound":
		return fail(s, what, ProblemNotFound, false, "", err)
	case "NoSuchBucket":
		return s.noBucket(what, err)
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "ExpiredToken",
		"InvalidSecurity", "AuthorizationHeaderMalformed", "AllAccessDisabled", "AccountProblem":
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
			hint = fmt.Sprintf("cannot reach %s: check endpoint=HOST:PORT in the store URL and that the server is up", s.endpointURL())
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
	return fail(s, what, ProblemNoBucket, false,
		fmt.Sprintf("bucket %q does not exist; create it first, e.g.: %s (or: mc mb ALIAS/%s)", s.bucket, mb, s.bucket), err)
}

// notFoundOrNoBucket refines a 404 from HEAD or GET, which does not say
// whether the key or the bucket is missing.
func (s *s3Store) notFoundOrNoBucket(ctx context.Context, key, what string, nf error) error {
	bctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	if ok, err := s.meta.BucketExists(bctx, s.bucket); err == nil && !ok {
		return s.noBucket(what, nf)
	}
	return notFound(s, key)
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
	if errors.Is(err, ErrNotFound) {
		return Object{}, s.notFoundOrNoBucket(ctx, key, what, err)
	}
	return obj, err
}

func (s *s3Store) Get(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, Object{}, err
	}
	what := fmt.Sprintf("get %q", key)
	var rc *minio.Object
	var obj Object
	// The object's reads run under ctx, the caller's context: no per-call
	// deadline, since the body may be large. Opening is retried.
	err := s.opts.Retry.do(ctx, s.opts.Log, what, 0, func(_ context.Context) error {
		o, err := s.meta.GetObject(ctx, s.bucket, s.full(key), minio.GetObjectOptions{})
		if err != nil {
			return s.classify(ctx, what, err)
		}
		info, err := o.Stat() // sends the GET and reads the headers
		if err != nil {
			o.Close()
			return s.classify(ctx, what, err)
		}
		rc, obj = o, Object{Key: key, Size: info.Size, Modified: info.LastModified.UTC()}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, Object{}, s.notFoundOrNoBucket(ctx, key, what, err)
		}
		return nil, Object{}, err
	}
	return &getReader{rc: rc, store: s, key: key, size: obj.Size}, obj, nil
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

func (s *s3Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	what := fmt.Sprintf("put %q", key)
	// Refuse an existing key before sending any data; the conditional
	// write below closes the race where the server supports it.
	if _, err := s.Stat(ctx, key); err == nil {
		return exists(s, key)
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	rewind, canReplay := replayable(r)
	attempts := 1
	if canReplay {
		attempts = s.opts.Retry.Attempts
	}
	for attempt := 1; ; attempt++ {
		body := newBody(r, size)
		popts := minio.PutObjectOptions{
			ContentType: "application/octet-stream",
			PartSize:    s.opts.PartSize,
			NumThreads:  1,
		}
		popts.SetMatchETagExcept("*")
		_, err := s.put.PutObject(ctx, s.bucket, s.full(key), body, size, popts)
		if err == nil {
			return nil
		}
		s.cleanup(ctx, key)
		if cerr := ctxErr(ctx, s, what); cerr != nil {
			return cerr
		}
		if berr := body.bodyFailure(s, key); berr != nil {
			return berr
		}
		cerr := s.classify(ctx, what, err)
		if !isTransient(cerr) || attempt >= attempts || ctx.Err() != nil {
			if isTransient(cerr) && !canReplay {
				return errcode.Hinted(cerr, errcode.StorageUnavailable,
					"the upload was streamed and cannot be replayed, so it was not retried; nothing was left in the store: run the command again once the store is back (director store check tells when)",
					"upload interrupted")
			}
			return cerr
		}
		wait := s.opts.Retry.delay(attempt)
		s.opts.Log.Warn("upload failed, retrying", "store", s.String(), "key", key, "attempt", attempt, "wait", wait, "err", err)
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

// cleanup aborts any pending multipart upload of key after a failed Put.
// minio-go aborts its own upload already; this also catches one whose abort
// failed. It runs with a fresh context so that a cancelled Put still cleans
// up, bounded by CallTimeout.
func (s *s3Store) cleanup(ctx context.Context, key string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.CallTimeout)
	defer cancel()
	if err := s.meta.RemoveIncompleteUpload(cctx, s.bucket, s.full(key)); err != nil {
		s.opts.Log.Warn("could not remove the failed upload's parts; a bucket lifecycle rule (AbortIncompleteMultipartUpload) will",
			"store", s.String(), "key", key, "err", err)
	}
}
