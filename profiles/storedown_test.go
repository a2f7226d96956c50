package profiles

import (
	"bufio"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"director/catalog"
	"director/errcode"
	"director/storage"
)

// silentServer accepts connections and reads requests but never answers,
// as a store whose server is stopped (SIGSTOP) or hung does. It counts the
// requests it read.
type silentServer struct {
	ln   net.Listener
	reqs atomic.Int32
	done chan struct{}
	wg   sync.WaitGroup
}

func newSilentServer(t *testing.T) *silentServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentServer{ln: ln, done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				if _, err := bufio.NewReader(c).ReadString('\n'); err == nil {
					s.reqs.Add(1)
				}
				<-s.done
			}()
		}
	}()
	t.Cleanup(func() {
		close(s.done)
		ln.Close()
		s.wg.Wait()
	})
	return s
}

// onHungStore is a Manager with profile "work" whose store is an S3
// endpoint that never answers (short timeouts, no retries), and whose
// catalog knows a snapshot of work there, as after earlier runs.
func onHungStore(t *testing.T) (*Manager, *silentServer) {
	t.Helper()
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "v")
	srv := newSilentServer(t)
	st, err := storage.Open(ctx, "s3://bucket/pfx?endpoint="+srv.ln.Addr().String()+"&insecure=true", storage.Options{
		AWSAccessKeyID: "a", AWSSecretAccessKey: "b", CallTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond,
		Retry: storage.RetryPolicy{Attempts: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Store, m.InsecureNoEncryption = st, true
	row := catalog.Snapshot{ID: "work-20260101T000000Z-abcd", Profile: "work", Store: catalog.StoreName(storage.ID(st)),
		ObjectKey: "work/work-20260101T000000Z-abcd.tar.zst", ManifestKey: "work/work-20260101T000000Z-abcd.manifest.json",
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := m.Catalog.UpsertSnapshot(ctx, row); err != nil {
		t.Fatal(err)
	}
	return m, srv
}

// A store that does not answer costs a snapshot or a restore one wait: the
// listing before it fails the command, rather than being logged and
// followed by the upload or the download (each waiting again) and, for a
// snapshot, by a delete of an archive that was never stored. A user saw a
// snapshot fail after three of the 30 s waits.
func TestHungStoreCostsOneWait(t *testing.T) {
	ctx := context.Background()
	m, srv := onHungStore(t)
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"snapshot", func() error { _, err := m.Snapshot(ctx, "work", SnapshotOptions{}); return err }},
		{"restore latest", func() error { _, err := m.Restore(ctx, "work", "latest", RestoreOptions{}); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.reqs.Load()
			err := tc.do()
			if errcode.Of(err) != errcode.StorageUnavailable {
				t.Fatalf("%v [%s], want storage_unavailable", err, errcode.Of(err))
			}
			// The request is counted when the server reads it, which
			// may come after the client gave up: wait for it.
			deadline := time.Now().Add(5 * time.Second)
			for srv.reqs.Load() == before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := srv.reqs.Load() - before; n != 1 {
				t.Errorf("%d requests reached the store, want 1: %v", n, err)
			}
		})
	}
}

// A run whose profile holds a login newer than its latest snapshot keeps
// it (restore: latest) without the store: a store that does not answer
// does not fail it, as it did when the listing's timeout failed the
// restore before the profile's login was looked at.
func TestHungStoreKeepsNewerLocalLogin(t *testing.T) {
	ctx := context.Background()
	m, _ := onHungStore(t)
	if err := m.MarkUnsaved(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	res, err := m.Restore(ctx, "work", "latest", RestoreOptions{KeepUnsaved: true})
	if err != nil || !res.KeptLocal {
		t.Fatalf("restore: %+v, %v; want the local profile kept", res, err)
	}
}
