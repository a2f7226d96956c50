package storage

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"director/errcode"
)

// Options configures the backends that Open builds. The command line fills
// the credentials from flags and their environment variables.
type Options struct {
	// AWSAccessKeyID and AWSSecretAccessKey sign s3:// requests
	// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).
	AWSAccessKeyID, AWSSecretAccessKey string
	// SupabaseURL is the project URL, e.g. https://abc.supabase.co, and
	// SupabaseServiceKey its service_role key (SUPABASE_URL,
	// SUPABASE_SERVICE_KEY); both are needed by supabase:// stores.
	SupabaseURL, SupabaseServiceKey string
	// HTTPClient carries every remote request; nil means a client with
	// dial, TLS and response-header timeouts.
	HTTPClient *http.Client
	// Retry bounds the retries of transient failures.
	Retry RetryPolicy
	// CallTimeout is the deadline of each attempt of one metadata call
	// (Stat, List, Delete, bucket checks) and of opening a Get, up to the
	// response headers; 0 means 30 s. An attempt that runs out is not
	// retried: the call fails with storage_unavailable. Put and the body of
	// a Get have no overall deadline, since their length is unbounded;
	// IdleTimeout bounds them instead.
	CallTimeout time.Duration
	// IdleTimeout fails any request that makes no progress for this long:
	// a download from which no byte arrives, an upload the store stops
	// reading, an answer that does not come; 0 means 60 s. The request's
	// connection is closed and the error is storage_unavailable. A slow
	// transfer that keeps moving is never cut.
	IdleTimeout time.Duration
	// PartSize is the multipart part size of s3:// uploads of unknown
	// length; 0 means 16 MiB. One part is buffered in memory.
	PartSize uint64
	// Log receives retries and clean-up failures; nil discards them.
	Log *slog.Logger
}

const (
	defaultCallTimeout = 30 * time.Second
	defaultIdleTimeout = 60 * time.Second
	defaultPartSize    = 16 << 20
)

func (o Options) withDefaults() Options {
	o.Retry = o.Retry.withDefaults()
	if o.CallTimeout <= 0 {
		o.CallTimeout = defaultCallTimeout
	}
	if o.PartSize == 0 {
		o.PartSize = defaultPartSize
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = defaultIdleTimeout
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: newTransport()}
	}
	if _, ok := o.HTTPClient.Transport.(*watchTransport); !ok {
		// A copy, so that the caller's client stays as it was.
		c := *o.HTTPClient
		next := c.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		c.Transport = &watchTransport{next: next, idle: o.IdleTimeout}
		o.HTTPClient = &c
	}
	return o
}

// newTransport is http.DefaultTransport's setup with bounds on every phase
// that can hang before a response starts; withDefaults adds watchTransport,
// which bounds every phase by IdleTimeout, bodies included.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
		ExpectContinueTimeout: 1 * time.Second,
	}
}

// Open builds the store that rawURL names:
//
//	file:///abs/path                 objects are files under the folder
//	s3://BUCKET[/PREFIX][?endpoint=HOST:PORT[/PATH]&region=R&insecure=true]
//	supabase://[BUCKET][/PREFIX]     Supabase Storage; bucket browser-profiles by default
//
// A malformed URL is an invalid_input error with a hint. Open does no
// network I/O: problems with credentials, buckets or endpoints surface on the
// first call (see Check).
func Open(ctx context.Context, rawURL string, opts Options) (Store, error) {
	_ = ctx
	opts = opts.withDefaults()
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, badURL(rawURL, "missing scheme")
	}
	switch strings.ToLower(scheme) {
	case "file":
		return openFile(rawURL, rest)
	case "s3":
		return openS3(rawURL, opts)
	case "supabase":
		return openSupabase(rawURL, opts)
	default:
		return nil, badURL(rawURL, "unknown scheme %q", scheme)
	}
}

// IsRemote reports whether objects put into s leave this machine: false for
// file:// stores, true for every other backend. Callers refuse unencrypted
// uploads to remote stores. A store that wraps another should implement
// Remote() bool by asking the wrapped one; a store IsRemote cannot tell
// about counts as remote, the safe answer.
func IsRemote(s Store) bool {
	if r, ok := s.(interface{ Remote() bool }); ok {
		return r.Remote()
	}
	return true
}

// Remote is false for a folder on this machine's disks, whose objects stay
// here; true for one on a network file system (NFS, SMB, sshfs…), whose
// objects leave the machine as an S3 store's do.
func (s *fileStore) Remote() bool { return s.netFS != "" }

// NetworkFS is the type of the network file system holding the store's
// folder, "" for a local one.
func (s *fileStore) NetworkFS() string { return s.netFS }

// NetworkMount is the mount point of that file system, "" for a local one.
func (s *fileStore) NetworkMount() string { return s.netMount }

// Remote is true.
func (s *s3Store) Remote() bool { return true }

// Remote is true.
func (s *supabaseStore) Remote() bool { return true }

const urlHint = "use file:///abs/path, s3://bucket/prefix?endpoint=host:port&region=us-east-1 or supabase://bucket/prefix"

func badURL(rawURL, format string, args ...any) *errcode.Error {
	return errcode.New(errcode.InvalidInput, "bad store URL %q: "+format, append([]any{redactURL(rawURL)}, args...)...).WithHint(urlHint)
}

// colonInBucket refuses a bucket holding a ":", which no bucket name may.
// It is most likely a key and secret typed before the bucket
// (s3://KEY:SECRET/…@bucket, the secret holding a "/"), so the message
// names neither the bucket nor the port.
const colonInBucket = "the bucket holds a \":\", which no bucket name may: credentials (KEY:SECRET@) and endpoints (host:port) do not belong there"

// Redact returns a store URL as it may be shown (in logs, errors and the
// commands that hints give) without any secret it holds, as redactURL says;
// an opened store's String() is shorter still.
func Redact(rawURL string) string { return redactURL(rawURL) }

// redactURL drops any user:password@ part so that secrets never reach logs,
// also from the endpoint parameter (endpoint=https://KEY:SECRET@host), and
// the values of query parameters other than endpoint, region and insecure
// (a mistaken ?secret_key=… is echoed as ?secret_key=REDACTED).
//
// A secret typed unescaped may hold any of "/", "?" and "&" (AWS secret
// keys hold "/"; MinIO and versitygw take any), so the user:password parts
// are found before the URL is split at "?" or "&": in the endpoint
// parameter, everything from its value (after its scheme) to the last "@"
// after it; before the bucket, everything up to the last "@" before that
// parameter.
func redactURL(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return rawURL
	}
	const ep = "endpoint="
	head, tail := rest, ""
	if i := strings.Index(rest, ep); i >= 0 {
		head, tail = rest[:i+len(ep)], rest[i+len(ep):]
		if j := credentialsEnd(tail); j >= 0 && strings.Contains(tail[:j], "&") {
			// The "@" is past an "&": a password holding one, or another
			// parameter's value holding an "@". Either way nothing up to
			// the end of that value can be shown.
			tail = "REDACTED" + afterValue(tail[j+1:])
		} else {
			tail = redactEndpoint(tail)
		}
	}
	if strings.EqualFold(scheme, "file") {
		// A path may hold an "@" (/srv/snaps@nas): only what openFile
		// takes for a user part goes. The query is redacted below as for
		// any scheme.
		if i := fileCredentialsEnd(head); i >= 0 {
			head = "REDACTED@" + head[i+1:]
		}
	} else if i := credentialsEnd(head); i >= 0 {
		if q := strings.Index(head, "?"); q >= 0 && q < i {
			// Past a "?": a password holding one, or a parameter's
			// value holding an "@" (?secret_key=a@b), as above.
			after := afterValue(head[i+1:])
			if strings.HasPrefix(after, "&") {
				after = "?" + after[1:]
			}
			head = "REDACTED" + after
		} else {
			head = "REDACTED@" + head[i+1:]
		}
	}
	rest, query, hasQuery := strings.Cut(head+tail, "?")
	out := scheme + "://" + rest
	if !hasQuery {
		return out
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		k, v, hasValue := strings.Cut(p, "=")
		switch {
		case !hasValue:
		case k == "endpoint":
			params[i] = k + "=" + redactEndpoint(v)
		case k != "region" && k != "insecure":
			params[i] = k + "=REDACTED"
		}
	}
	return out + "?" + strings.Join(params, "&")
}

// fileCredentialsEnd is where the user part of a file:// URL's rest (after
// "file://") ends, as credentialsEnd says, or -1 for none. It is the first
// segment holding an "@" (or "%40"), or, for a password holding a "/",
// everything up to an "@/" (or "%40/") of a rest not starting with "/". An
// "@" further in a path (file:///backups/me@work) is a folder's name.
// openFile refuses what this finds; redactURL hides it.
func fileCredentialsEnd(rest string) int {
	host, _, _ := strings.Cut(rest, "/")
	i := credentialsEnd(host)
	if !strings.HasPrefix(rest, "/") {
		if j := strings.LastIndex(rest, "@/"); j > i {
			i = j
		}
		if j := strings.LastIndex(strings.ToLower(rest), "%40/"); j >= 0 && j+2 > i {
			i = j + 2
		}
	}
	return i
}

// afterValue is what follows the value s starts in: "" at the end, or
// the "&" or "?" that ends it and the rest.
func afterValue(s string) string {
	if i := strings.IndexAny(s, "&?"); i >= 0 {
		return s[i:]
	}
	return ""
}

// redactEndpoint drops a user:password@ part from an endpoint parameter,
// escaped (%40) or not: everything up to the last "@", even past a "/"
// (an unescaped secret may hold one).
func redactEndpoint(v string) string {
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok {
		scheme, rest = "", v
	}
	i := credentialsEnd(rest)
	if i < 0 {
		return v
	}
	rest = "REDACTED@" + rest[i+1:]
	if ok {
		return scheme + "://" + rest
	}
	return rest
}

// credentialsEnd is the index of the last byte of the last "@" (or "%40")
// in s, -1 when s has none.
func credentialsEnd(s string) int {
	i := strings.LastIndex(s, "@")
	if j := strings.LastIndex(s, "%40"); j >= 0 && j+2 > i { // digits: no case to fold
		i = j + 2
	}
	return i
}

// parseErr is what url.Parse said about rawURL, without rawURL itself
// (which its error quotes whole, credentials included). When rawURL holds a
// user:password@ part, url.Parse's own words may quote a piece of the
// password (`invalid port ":SECRET" after host` for a secret holding a
// "/"), so that is all it says.
func parseErr(rawURL string, err error) error {
	if _, rest, ok := strings.Cut(rawURL, "://"); ok && credentialsEnd(rest) >= 0 {
		// Anywhere: a password may hold a "?" (see redactURL).
		return errors.New("credentials do not belong in the URL")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
