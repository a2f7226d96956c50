package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"director/errcode"
)

// s3Server is one versitygw run by this program: posix backend on dir, a
// random 127.0.0.1 port, fresh access keys, the same way internal/s3test
// starts it for the tests.
type s3Server struct {
	Endpoint  string
	AccessKey string
	SecretKey string
	Bucket    string

	cmd  *exec.Cmd
	done chan struct{}
	logs *capBuffer
	log  *slog.Logger
}

// startServer starts versitygw and creates the bucket; the caller must Stop
// it. A server that does not answer within 20 s is stopped and reported.
func startServer(ctx context.Context, bin, dir string, log *slog.Logger) (*s3Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	s := &s3Server{
		Endpoint:  "127.0.0.1:" + strconv.Itoa(port),
		AccessKey: "benchstore",
		SecretKey: hex.EncodeToString(secret),
		Bucket:    "director-bench",
		logs:      &capBuffer{max: 1 << 20},
		log:       log,
	}
	cmd := exec.Command(bin, "--port", s.Endpoint, "--quiet", "posix", dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+s.AccessKey, "ROOT_SECRET_ACCESS_KEY="+s.SecretKey)
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	cmd.SysProcAttr = childAttr() // dies with us even if we are killed
	if err := cmd.Start(); err != nil {
		return nil, errcode.Hinted(err, errcode.Internal, "check that "+bin+" runs", "starting versitygw")
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.done) }()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.makeBucket(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	log.Info("versitygw serving", "endpoint", s.Endpoint, "pid", cmd.Process.Pid)
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, errcode.Hinted(err, errcode.Internal, "check that 127.0.0.1 ports can be bound", "finding a free port")
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *s3Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(20 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-s.done:
			return errcode.New(errcode.Internal, "versitygw exited at start: %s", s.logs.String()).
				WithHint("run the same versitygw command by hand to see why")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		resp, err := client.Get("http://" + s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return nil // any answer (403 without a signature) means it serves
		}
		if time.Now().After(deadline) {
			return errcode.New(errcode.StorageUnavailable, "versitygw did not answer on %s within 20s: %v", s.Endpoint, err).
				WithHint("check the machine's load and that 127.0.0.1 ports can be bound")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *s3Server) makeBucket(ctx context.Context) error {
	c, err := minio.New(s.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return errcode.Hinted(err, errcode.Internal, "report it: the endpoint is built by this program", "minio client")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		return errcode.Hinted(err, errcode.StorageUnavailable, "see the versitygw output above the error", "creating bucket %s", s.Bucket)
	}
	return nil
}

// StoreURL is the director store URL of prefix in the bucket.
func (s *s3Server) StoreURL(prefix string) string {
	return fmt.Sprintf("s3://%s/%s?", s.Bucket, prefix) + url.Values{"endpoint": {s.Endpoint}, "insecure": {"true"}}.Encode()
}

// Stop terminates the server: SIGTERM, then SIGKILL after 5 s. It is safe
// to call more than once.
func (s *s3Server) Stop() {
	if s == nil || s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.log.Info("versitygw stopped", "endpoint", s.Endpoint)
	s.cmd = nil
}

// capBuffer keeps the first max bytes written to it, safe for concurrent use.
type capBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}
