package profiles

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"

	"director/catalog"
	"director/errcode"
	"director/internal/s3test"
	"director/storage"
)

// s3Manager is a Manager on its own home that shares the S3 bucket of srv,
// encrypting to id.
func s3Manager(t *testing.T, srv *s3test.Server, id *age.X25519Identity) *Manager {
	t.Helper()
	ctx := context.Background()
	home := t.TempDir()
	st, err := storage.Open(ctx, srv.StoreURL("snaps"), storage.Options{
		AWSAccessKeyID: srv.AccessKey, AWSSecretAccessKey: srv.SecretKey,
		Retry: storage.RetryPolicy{Attempts: 2, BaseDelay: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(ctx, filepath.Join(home, "director.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return &Manager{
		Root: filepath.Join(home, "browser-profiles"), Store: st, Catalog: cat, LockWait: 30 * time.Second,
		Recipients: []age.Recipient{id.Recipient()}, Identities: []age.Identity{id},
	}
}

func TestS3FullCycleAndTwoMachines(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	id, _ := age.GenerateX25519Identity()
	a := s3Manager(t, srv, id)
	b := s3Manager(t, srv, id)

	// A plaintext upload to a remote store is refused.
	plain := s3Manager(t, srv, id)
	plain.Recipients = nil
	if err := plain.Create(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Snapshot(ctx, "x", SnapshotOptions{}); errcode.Of(err) != errcode.InvalidInput {
		t.Fatalf("unencrypted upload to S3: %v, want invalid_input refusal", err)
	}

	if err := a.Create(ctx, "mail"); err != nil {
		t.Fatal(err)
	}
	want := writeProfile(t, a.Dir("mail"), "machine-a")
	first, err := a.Snapshot(ctx, "mail", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verify(ctx, "mail", first.ID); err != nil {
		t.Fatal(err)
	}

	// Machine B restores latest: its catalog is empty, the store has it.
	got, err := b.Restore(ctx, "mail", "latest", RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != first.ID {
		t.Fatalf("B restored %s, want A's %s", got.ID, first.ID)
	}
	sameTree(t, readTree(t, b.Dir("mail")), want)

	// Both machines snapshot the same profile at the same moment: both survive.
	var wg sync.WaitGroup
	results := make([]*SnapshotResult, 2)
	errs := make([]error, 2)
	for i, m := range []*Manager{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = m.Snapshot(ctx, "mail", SnapshotOptions{})
		}()
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil {
			t.Fatalf("machine %d: %v", i, errs[i])
		}
	}
	if results[0].ObjectKey == results[1].ObjectKey {
		t.Fatal("two machines wrote the same object key")
	}
	for _, r := range results {
		if _, err := b.Verify(ctx, "mail", r.ID); err != nil {
			t.Errorf("verify %s from B: %v", r.ID, err)
		}
	}

	// A fresh machine rebuilds its catalog from the bucket alone.
	c := s3Manager(t, srv, id)
	rb, err := c.Rebuild(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Added) != 3 || len(rb.Skipped) != 0 {
		t.Fatalf("rebuild: %+v", rb)
	}
	// Prune on A keeps the newest; objects of pruned snapshots leave the bucket.
	if _, err := a.Rebuild(ctx, false); err != nil {
		t.Fatal(err)
	}
	pr, err := a.Prune(ctx, "mail", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Kept) != 1 || len(pr.Deleted) != 2 {
		t.Fatalf("prune: %+v", pr)
	}
	objs, err := a.Store.List(ctx, "mail/")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("bucket holds %d objects after prune, want 2: %v", len(objs), objs)
	}
	// The bucket never holds plaintext.
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, ".age") {
			t.Errorf("unencrypted object %s", o.Key)
		}
	}
	if rep := storage.Check(ctx, a.Store); rep.Err() != nil {
		t.Fatalf("store check: %v", rep.Err())
	}
}

// TestS3ServerStopsMidUpload: the S3 server dies while a snapshot uploads.
// The command fails with storage_unavailable, leaves no catalog row and no
// object, and the same snapshot succeeds once the server is back.
func TestS3ServerStopsMidUpload(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	id, _ := age.GenerateX25519Identity()
	m := s3Manager(t, srv, id)
	if err := m.Create(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("big"), "x")
	// 48 MiB of random data: several multipart parts, long enough to stop
	// the server in the middle.
	blob := make([]byte, 48<<20)
	rand.Read(blob)
	if err := os.WriteFile(filepath.Join(m.Dir("big"), "Default", "History"), blob, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Stop once the upload has started: wait until the server has
		// received an upload's first bytes.
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if len(srv.IncompleteUploads(srv.Bucket)) > 0 || dirBytes(srv.Dir) > 4<<20 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		srv.Kill()
	}()
	_, err := m.Snapshot(ctx, "big", SnapshotOptions{})
	<-done
	if errcode.Of(err) != errcode.StorageUnavailable {
		t.Fatalf("snapshot while the server died: %v (code %s), want storage_unavailable", err, errcode.Of(err))
	}
	if snaps, _ := m.Snapshots(ctx, "big"); len(snaps) != 0 {
		t.Fatalf("failed upload left %d catalog rows", len(snaps))
	}
	srv.Restart()
	if objs := srv.Objects(srv.Bucket); len(objs) != 0 {
		t.Errorf("failed upload left objects: %v", objs)
	}
	res, err := m.Snapshot(ctx, "big", SnapshotOptions{})
	if err != nil {
		t.Fatalf("the same snapshot after a restart: %v", err)
	}
	if _, err := m.Verify(ctx, "big", res.ID); err != nil {
		t.Fatal(err)
	}
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// s3Work starts an S3 server and returns it with a Manager on it whose
// profile "work" has n snapshots.
func s3Work(t *testing.T, n int) (*s3test.Server, *Manager) {
	t.Helper()
	srv := s3test.Start(t)
	id, _ := age.GenerateX25519Identity()
	m := s3Manager(t, srv, id)
	if err := m.Create(context.Background(), "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "work")
	for range n {
		if _, err := m.Snapshot(context.Background(), "work", SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return srv, m
}

// A prune that cannot list the store keeps the store's own hint: refused
// credentials are named as such, not taken for a store that is down.
func TestPruneWithBadCredentialsKeepsTheStoreHint(t *testing.T) {
	ctx := context.Background()
	srv, m := s3Work(t, 2)
	bad, err := storage.Open(ctx, srv.StoreURL("snaps"), storage.Options{
		AWSAccessKeyID: srv.AccessKey, AWSSecretAccessKey: "wrongwrong", Retry: storage.RetryPolicy{Attempts: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Store = bad
	_, err = m.Prune(ctx, "work", 1, 0)
	hint := errcode.HintOf(err)
	if errcode.Of(err) != errcode.StorageUnavailable || !strings.Contains(hint, "AWS_SECRET_ACCESS_KEY") || !strings.Contains(hint, "nothing was deleted") {
		t.Errorf("prune with a wrong secret key: %v [%s], hint %q; want storage_unavailable with the store's hint on credentials and that nothing was deleted",
			err, errcode.Of(err), hint)
	}
	if rows, err := m.Snapshots(ctx, "work"); err != nil || len(rows) != 2 {
		t.Errorf("after the failed prune the catalog lists %d snapshots (%v), want 2", len(rows), err)
	}
}

// A command that fails because the store is down says so in its error and
// logs nothing at the default level: the error is the one line the user
// sees (README: "Errors print one line on stderr").
func TestFailuresWithTheStoreDownLogNothing(t *testing.T) {
	ctx := context.Background()
	srv, m := s3Work(t, 1)
	srv.Stop()
	tests := []struct {
		name string
		call func() error
	}{
		{"snapshot", func() error { _, err := m.Snapshot(ctx, "work", SnapshotOptions{}); return err }},
		{"restore latest", func() error { _, err := m.Restore(ctx, "work", "latest", RestoreOptions{}); return err }},
		{"verify latest", func() error { _, err := m.Verify(ctx, "work", "latest"); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			m.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			if err := tt.call(); errcode.Of(err) != errcode.StorageUnavailable {
				t.Fatalf("%s with the store down: %v [%s], want %s", tt.name, err, errcode.Of(err), errcode.StorageUnavailable)
			}
			if logs.Len() > 0 {
				t.Errorf("logged as well as failing: %s", logs.String())
			}
		})
	}
}

// TestRestoreLatestKeepsTheStoresDiagnosis: restore latest on a machine
// whose catalog has no snapshot of the profile must list the store; when
// that fails, the hint is the store's own diagnosis (a misspelt bucket,
// refused credentials), not only "run director store check", which for a
// Supabase store would create the misspelt bucket and pass.
func TestRestoreLatestKeepsTheStoresDiagnosis(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	tests := []struct {
		name     string
		url      string
		secret   string
		wantHint string
	}{
		{"misspelt bucket", strings.Replace(srv.StoreURL("snaps"), "s3://"+srv.Bucket, "s3://"+srv.Bucket+"-typo", 1), srv.SecretKey, "does not exist"},
		{"wrong secret", srv.StoreURL("snaps"), "wrongwrong", "AWS_SECRET_ACCESS_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestManager(t)
			st, err := storage.Open(ctx, tt.url, storage.Options{
				AWSAccessKeyID: srv.AccessKey, AWSSecretAccessKey: tt.secret, Retry: storage.RetryPolicy{Attempts: 1},
			})
			if err != nil {
				t.Fatal(err)
			}
			m.Store = st
			for _, call := range []func() error{
				func() error { _, err := m.Restore(ctx, "work", "latest", RestoreOptions{}); return err },
				func() error { _, err := m.Verify(ctx, "work", "latest"); return err },
			} {
				err := call()
				if errcode.Of(err) != errcode.StorageUnavailable || !strings.Contains(errcode.HintOf(err), tt.wantHint) {
					t.Errorf("err = %v [%s], hint %q; want storage_unavailable with %q in the hint", err, errcode.Of(err), errcode.HintOf(err), tt.wantHint)
				}
			}
		})
	}
}

// TestPlaintextPlantedInRemoteStore: director puts only encrypted archives
// in a remote store, so a plaintext snapshot there was planted by whoever
// can write to the bucket (with their own login inside). restore latest,
// the pre-check a run makes and a restore by id refuse it with
// unsafe_archive and leave the profile as it was; --insecure-no-encryption,
// which stored it, restores it.
func TestPlaintextPlantedInRemoteStore(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	id, _ := age.GenerateX25519Identity()
	victim := s3Manager(t, srv, id)
	if err := victim.Create(ctx, "bank"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, victim.Dir("bank"), "the user's login")
	want := readTree(t, victim.Dir("bank"))
	if _, err := victim.Snapshot(ctx, "bank", SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}

	attacker := s3Manager(t, srv, id)
	attacker.Recipients, attacker.Identities, attacker.InsecureNoEncryption = nil, nil, true
	if err := attacker.Create(ctx, "bank"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, attacker.Dir("bank"), "the attacker's login")
	planted, err := attacker.Snapshot(ctx, "bank", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}

	for _, ref := range []string{"latest", planted.ID} {
		_, err := victim.Restore(ctx, "bank", ref, RestoreOptions{Force: true})
		if errcode.Of(err) != errcode.UnsafeArchive || !strings.Contains(err.Error(), "is not encrypted") ||
			!strings.Contains(errcode.HintOf(err), "--insecure-no-encryption") {
			t.Fatalf("restore %s of a planted plaintext snapshot: %v (hint %q), want unsafe_archive", ref, err, errcode.HintOf(err))
		}
		sameTree(t, readTree(t, victim.Dir("bank")), want)
		if err := victim.CheckRestore(ctx, "bank", ref, RestoreOptions{}); errcode.Of(err) != errcode.UnsafeArchive {
			t.Fatalf("CheckRestore %s: %v, want unsafe_archive", ref, err)
		}
	}

	victim.InsecureNoEncryption = true
	got, err := victim.Restore(ctx, "bank", "latest", RestoreOptions{Force: true})
	if err != nil || got.ID != planted.ID {
		t.Fatalf("restore with --insecure-no-encryption: %+v, %v", got, err)
	}
}
