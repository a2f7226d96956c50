package storage

// S3 endpoints that live below a path, such as Supabase's S3 endpoint
// https://PROJECT.supabase.co/storage/v1/s3.
//
// minio-go refuses an endpoint with a path ("Endpoint url cannot have fully
// qualified paths"; its maintainers: the S3 API is served at "/", see
// minio/minio#13437). Supabase serves it below /storage/v1/s3 and checks each
// request's SigV4 signature over the full path the server receives,
// /storage/v1/s3/BUCKET/KEY — its storage-api builds the canonical URI as the
// configured prefix plus the request path — which is also what the AWS SDKs
// sign when they are given that endpoint with forcePathStyle.
//
// So the s3 backend gives minio-go the bare host and this RoundTripper, which
// prefixes the path to every request URL and signs the request again with
// SigV4 over the full path, with the same credentials and region and the
// X-Amz-Content-Sha256 value minio-go chose.
//
// A re-sign replaces the seed signature, so payload modes whose body carries
// signatures chained from the seed (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, which
// minio-go uses for PUTs over plain http, and the *-TRAILER modes) cannot
// survive it. The backend never asks for them on a path endpoint: every
// upload request there has its body in memory (one part at a time, see
// s3Store.Put), so it hashes the body and sends its SHA-256 in
// X-Amz-Content-Sha256 with minio-go's DisableContentSha256 set, which makes
// minio-go sign one ordinary request. That works alike over http and https
// and binds the body to the signature. pathSigner refuses the other modes
// outright rather than send a request the server must reject. Presigned URLs
// (signatures in the query) are never used by the backend and are refused
// too.

import (
	"errors"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7/pkg/signer"

	"director/errcode"
)

// pathSigner is the http.RoundTripper of a minio-go client whose endpoint
// has a path: see the comment at the top of this file.
type pathSigner struct {
	prefix    string // e.g. "/storage/v1/s3": a leading "/", none trailing, only unreserved characters and "/"
	accessKey string
	secretKey string
	region    string
	next      http.RoundTripper
}

var errChainedPayload = errors.New("request payload signed in chunks chained from the seed signature")

// RoundTrip sends req below the prefix, signed again over the full path.
func (p *pathSigner) RoundTrip(req *http.Request) (*http.Response, error) {
	sha := req.Header.Get("X-Amz-Content-Sha256")
	if strings.HasPrefix(sha, "STREAMING-") || len(req.Trailer) > 0 || req.Header.Get("X-Amz-Trailer") != "" {
		closeBody(req)
		return nil, errcode.Hinted(errChainedPayload, errcode.Internal,
			"this is a bug in director's s3 backend (a minio-go change?); report it with this message",
			"%s %s: payload mode %q cannot be re-signed for an endpoint with a path", req.Method, req.URL.Path, sha)
	}
	if req.URL.Query().Has("X-Amz-Signature") {
		closeBody(req)
		return nil, errcode.New(errcode.Internal, "%s %s: presigned requests are not supported for an endpoint with a path", req.Method, req.URL.Path).
			WithHint("this is a bug in director's s3 backend; report it with this message")
	}
	r := req.Clone(req.Context())
	r.URL.Path = p.prefix + r.URL.Path
	if r.URL.RawPath != "" {
		// The prefix is made of unreserved characters: escaped, it is itself.
		r.URL.RawPath = p.prefix + r.URL.RawPath
	}
	r.Header.Del("Authorization")
	return p.next.RoundTrip(signer.SignV4(*r, p.accessKey, p.secretKey, "", p.region))
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// checkEndpointPath validates the path of an endpoint (without its leading
// slash or a trailing one): non-empty segments other than "." and "..",
// made of characters that need no escaping (letters, digits, "-._~"), so
// that the path is sent and signed exactly as written.
func checkEndpointPath(path string) error {
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return errors.New("empty, . or .. segment")
		}
		for _, c := range seg {
			if !isUnreserved(c) {
				return errors.New("only letters, digits and -._~ are allowed in its segments")
			}
		}
	}
	return nil
}

func isUnreserved(c rune) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
