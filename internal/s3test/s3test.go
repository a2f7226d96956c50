package s3test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Server is one running versitygw.
type Server struct {
	Endpoint  string // host:port, e.g. 127.0.0.1:40123
	AccessKey string
	SecretKey string
	Bucket    string // created by Start
	Dir       string // the posix backend's root; bucket folders live here

	t    testing.TB
	bin  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	logs *lockedBuffer
}

// Binary returns the versitygw to run: $VERSITYGW, /root/go/bin/versitygw,
// or versitygw on PATH; "" when there is none.
func Binary() string {
	if b := os.Getenv("VERSITYGW"); b != "" {
		return b
	}
	if home, err := os.UserHomeDir(); err == nil {
		if b := filepath.Join(home, "go", "bin", "versitygw"); isExec(b) {
			return b
		}
	}
	if b := "/root/go/bin/versitygw"; isExec(b) {
		return b
	}
	if b, err := exec.LookPath("versitygw"); err == nil {
		return b
	}
	return ""
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Start runs versitygw on a free 127.0.0.1 port with a fresh folder and
// keys, creates the bucket "director-test", and stops the server when the
// test ends. Without the binary it fails under CI and skips otherwise.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		msg := "versitygw not found (set VERSITYGW, or: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s := &Server{
		Endpoint:  "127.0.0.1:" + strconv.Itoa(freePort(t)),
		AccessKey: "directortest",
		SecretKey: "directortest-secret-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		Bucket:    "director-test",
		Dir:       t.TempDir(),
		t:         t,
		bin:       bin,
		logs:      &lockedBuffer{},
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("versitygw output:\n%s", s.logs.String())
		}
	})
	s.start()
	s.MakeBucket(s.Bucket)
	return s
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *Server) start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command(s.bin, "--port", s.Endpoint, "--quiet", "posix", s.Dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+s.AccessKey, "ROOT_SECRET_ACCESS_KEY="+s.SecretKey)
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting %s: %v", s.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done

	deadline := time.Now().Add(20 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-done:
			s.cmd = nil
			s.t.Fatalf("versitygw exited at start:\n%s", s.logs.String())
		default:
		}
		resp, err := client.Get(s.URL() + "/")
		if err == nil {
			resp.Body.Close()
			return // any HTTP answer (403 without a signature) means it serves
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("versitygw did not answer on %s within 20s: %v\n%s", s.Endpoint, err, s.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop terminates the server (SIGTERM, then SIGKILL after 5 s). The folder
// and the port stay reserved for Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Kill stops the server abruptly, as a crash or a lost network would.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Restart starts the server again on the same port and folder.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// URL is the server's base URL, http://host:port.
func (s *Server) URL() string { return "http://" + s.Endpoint }

// StoreURL is a director store URL for the bucket and prefix.
func (s *Server) StoreURL(prefix string) string {
	u := "s3://" + s.Bucket
	if prefix != "" {
		u += "/" + prefix
	}
	return u + "?" + url.Values{"endpoint": {s.Endpoint}, "insecure": {"true"}}.Encode()
}

// Client returns a minio-go client for inspecting the server directly.
func (s *Server) Client() *minio.Client {
	s.t.Helper()
	c, err := minio.New(s.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Secure:       false,
		Region:       "us-east-1",
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		s.t.Fatalf("minio client: %v", err)
	}
	return c
}

// MakeBucket creates a bucket.
func (s *Server) MakeBucket(name string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Client().MakeBucket(ctx, name, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		s.t.Fatalf("creating bucket %s: %v", name, err)
	}
}

// Objects lists every object key in the bucket.
func (s *Server) Objects(bucket string) []string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var keys []string
	for o := range s.Client().ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			s.t.Fatalf("listing %s: %v", bucket, o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}

// IncompleteUploads lists the keys of multipart uploads that were started
// and never completed or aborted.
func (s *Server) IncompleteUploads(bucket string) []string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var keys []string
	for u := range s.Client().ListIncompleteUploads(ctx, bucket, "", true) {
		if u.Err != nil {
			s.t.Fatalf("listing uploads of %s: %v", bucket, u.Err)
		}
		keys = append(keys, u.Key)
	}
	return keys
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
