package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"director/errcode"
)

const otherStore = "s3://bucket/prefix?endpoint=127.0.0.1:9000&insecure=true"

// Two stores in one catalog, with one id in both: every query sees only the
// rows of the store it is given.
func TestSnapshotsArePerStore(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	base := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	in := func(store, id, profile string, at time.Time) {
		t.Helper()
		s := snap(id, profile, at)
		s.Store = store
		if err := db.InsertSnapshot(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	in(testStore, "w1", "work", base)
	in(testStore, "w2", "work", base.Add(time.Minute))
	in(otherStore, "w2", "work", base.Add(time.Minute)) // the same snapshot, copied
	in(otherStore, "w3", "work", base.Add(time.Hour))   // newest, but only in the other store
	in(otherStore, "m1", "mail", base)

	ids := func(ss []Snapshot) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.ID+"@"+map[string]string{testStore: "A", otherStore: "B"}[s.Store])
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		store, profile, want string
	}{
		{testStore, "work", "w2@A,w1@A"},
		{testStore, "", "w2@A,w1@A"},
		{testStore, "mail", ""},
		{otherStore, "work", "w3@B,w2@B"},
		{otherStore, "", "w3@B,w2@B,m1@B"},
		{"file:///nowhere", "", ""},
	} {
		got, err := db.ListSnapshots(ctx, c.store, c.profile)
		if err != nil {
			t.Fatal(err)
		}
		if ids(got) != c.want {
			t.Errorf("ListSnapshots(%s, %q) = %s, want %s", c.store, c.profile, ids(got), c.want)
		}
	}
	for _, c := range []struct {
		store, profile, want string
		code                 errcode.Code
	}{
		{testStore, "work", "w2", ""},
		{otherStore, "work", "w3", ""},
		{testStore, "mail", "", errcode.SnapshotNotFound},
		{otherStore, "mail", "m1", ""},
	} {
		got, err := db.LatestSnapshot(ctx, c.store, c.profile)
		if errcode.Of(err) != c.code || (err == nil && (got.ID != c.want || got.Store != c.store)) {
			t.Errorf("LatestSnapshot(%s, %s) = %s@%s, %v; want %s (%q)", c.store, c.profile, got.ID, got.Store, err, c.want, c.code)
		}
	}
	for _, c := range []struct {
		store, id string
		code      errcode.Code
	}{
		{testStore, "w1", ""},
		{otherStore, "w1", errcode.SnapshotNotFound},
		{testStore, "w3", errcode.SnapshotNotFound},
		{otherStore, "w2", ""},
		{"", "w1", errcode.Internal},
	} {
		got, err := db.GetSnapshot(ctx, c.store, c.id)
		if errcode.Of(err) != c.code || (err == nil && got.Store != c.store) {
			t.Errorf("GetSnapshot(%s, %s) = %+v, %v; want code %q", c.store, c.id, got, err, c.code)
		}
		if err != nil && errcode.HintOf(err) == "" {
			t.Errorf("GetSnapshot(%s, %s): error without a hint: %v", c.store, c.id, err)
		}
	}

	// Upsert and delete in one store leave the other's row of that id alone.
	up := snap("w2", "work", base.Add(time.Minute))
	up.Store, up.Note = otherStore, "copied"
	if err := db.UpsertSnapshot(ctx, up); err != nil {
		t.Fatal(err)
	}
	if a, _ := db.GetSnapshot(ctx, testStore, "w2"); a.Note != "first login" {
		t.Errorf("upsert in B changed A's row: note %q", a.Note)
	}
	if err := db.DeleteSnapshot(ctx, otherStore, "w2"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetSnapshot(ctx, testStore, "w2"); err != nil {
		t.Errorf("delete in B removed A's row: %v", err)
	}
	if err := db.DeleteSnapshot(ctx, otherStore, "w1"); errcode.Of(err) != errcode.SnapshotNotFound {
		t.Errorf("deleting A's id through B = %v, want snapshot_not_found", err)
	}
	if set, _ := db.SnapshotIDs(ctx, otherStore); len(set) != 2 || !set["w3"] || !set["m1"] {
		t.Errorf("SnapshotIDs(B) = %v, want w3 and m1", set)
	}

	// A row without a store is refused.
	bad := snap("x", "work", base)
	bad.Store = ""
	if err := db.InsertSnapshot(ctx, bad); errcode.Of(err) != errcode.Internal {
		t.Errorf("insert without a store = %v, want internal_error", err)
	}
}

// openMigrated opens a catalog that a director of schema version left with
// the rows that the statements insert: Open then applies the later
// migrations.
func openMigrated(t *testing.T, version int, statements ...string) *DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "director.db")
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	var qs []string
	for _, m := range ms[:version] {
		qs = append(qs, m.sql)
	}
	qs = append(qs, fmt.Sprintf("PRAGMA user_version = %d", version))
	for _, q := range append(qs, statements...) {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if v, _ := db.Version(context.Background()); v != SchemaVersion() {
		t.Fatalf("version %d after Open, want %d", v, SchemaVersion())
	}
	return db
}

// A catalog written before migration 0002 keeps its rows, and the first
// store that adopts them gets them all; a second store gets none.
func TestMigrationAdoptsStorelessRows(t *testing.T) {
	ctx := context.Background()
	db := openMigrated(t, 1, `INSERT INTO snapshots (id, profile, object_key, manifest_key, created_at) VALUES
			('work-1', 'work', 'work/work-1.tar.zst', 'work/work-1.manifest.json', '2025-01-01T00:00:00.000000000Z'),
			('work-2', 'work', 'work/work-2.tar.zst', 'work/work-2.manifest.json', '2025-01-02T00:00:00.000000000Z')`)
	if legacy, err := db.LegacySnapshots(ctx); err != nil || len(legacy) != 2 {
		t.Fatalf("LegacySnapshots = %d rows, %v; want 2", len(legacy), err)
	}
	for _, c := range []struct {
		store   string
		ids     []string
		adopted int64
		listed  int
	}{
		{otherStore, nil, 0, 0},               // its archives are not there
		{testStore, []string{"work-1"}, 1, 1}, // only what the store holds
		{testStore, []string{"work-1", "work-2"}, 1, 2},
		{testStore, []string{"work-1", "work-2"}, 0, 2}, // idempotent
		{otherStore, []string{"work-2"}, 0, 0},          // already taken
	} {
		n, err := db.AdoptSnapshots(ctx, c.store, c.ids)
		if err != nil || n != c.adopted {
			t.Errorf("AdoptSnapshots(%s) = %d, %v; want %d", c.store, n, err, c.adopted)
		}
		list, _ := db.ListSnapshots(ctx, c.store, "work")
		if len(list) != c.listed {
			t.Errorf("after adoption, %s lists %d rows, want %d", c.store, len(list), c.listed)
		}
	}
	if s, err := db.LatestSnapshot(ctx, testStore, "work"); err != nil || s.ID != "work-2" || s.Store != testStore {
		t.Errorf("LatestSnapshot = %+v, %v", s, err)
	}
	var idx int
	if err := db.sql.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'snapshots' AND sql LIKE '%store%'`).Scan(&idx); err != nil || idx == 0 {
		t.Errorf("no index on snapshots.store (%d, %v)", idx, err)
	}
}

func TestStoreName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"file:///home/me/.director/snapshots", "file:///home/me/.director/snapshots"},
		{"s3://bucket/prefix?endpoint=127.0.0.1:9000/storage/v1/s3&region=eu-west-1&insecure=true",
			"s3://bucket/prefix?endpoint=127.0.0.1:9000/storage/v1/s3&region=eu-west-1&insecure=true"},
		{"s3://AKIA:secret@bucket/prefix", "s3://bucket/prefix"},
		{"s3://user@bucket", "s3://bucket"},
		{"s3://bucket?endpoint=h:1&secret_key=abc&region=r", "s3://bucket?endpoint=h:1&region=r"},
		{"supabase://bucket/p?apikey=xyz&token=t", "supabase://bucket/p"},
		{"s3://bucket/a@b", "s3://bucket/a@b"}, // an @ in the path is not credentials
		{"", ""},
	} {
		if got := StoreName(c.in); got != c.want {
			t.Errorf("StoreName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Secrets never reach the catalog, even when a caller passes them.
	ctx := context.Background()
	db := openTemp(t)
	s := snap("s1", "p", time.Now())
	s.Store = "s3://AKIA:topsecret@bucket/prefix?endpoint=h:1&x-amz-signature=zzz"
	if err := db.InsertSnapshot(ctx, s); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetSnapshot(ctx, "s3://bucket/prefix?endpoint=h:1", "s1")
	if err != nil || strings.Contains(got.Store, "topsecret") || strings.Contains(got.Store, "zzz") {
		t.Errorf("stored store %q, %v", got.Store, err)
	}
}

// A catalog as the first directors left it (testdata/schema1-8fbba2c.sql:
// schema 1, written by the build of commit 8fbba2c, with a run it was killed
// in) opens with this build: the migrations keep every row, its snapshots go
// to the store that adopts them, the killed run and its session are closed,
// and the audit log reads back.
func TestCatalogOfTheFirstDirector(t *testing.T) {
	ctx := context.Background()
	dump, err := os.ReadFile(filepath.Join("testdata", "schema1-8fbba2c.sql"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "director.db")
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(string(dump)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.Version(ctx); err != nil || v != SchemaVersion() {
		t.Fatalf("version %d, %v after Open; want %d", v, err, SchemaVersion())
	}

	const store = "s3://director-test/c?endpoint=127.0.0.1:39917&insecure=true"
	ids := []string{"demo-20261124T103544Z-su23", "demo-20261124T103544Z-2mlt"}
	legacy, err := db.LegacySnapshots(ctx)
	if err != nil || len(legacy) != 2 || legacy[0].ID != ids[0] {
		t.Fatalf("LegacySnapshots = %+v, %v; want %q", legacy, err, ids)
	}
	if n, err := db.AdoptSnapshots(ctx, store, ids); err != nil || n != 2 {
		t.Fatalf("AdoptSnapshots = %d, %v; want 2", n, err)
	}
	snaps, err := db.ListSnapshots(ctx, store, "demo")
	if err != nil || len(snaps) != 2 {
		t.Fatalf("ListSnapshots = %+v, %v; want 2 rows", snaps, err)
	}
	want := Snapshot{
		ID: ids[0], Store: store, Profile: "demo",
		ObjectKey: "demo/" + ids[0] + ".tar.zst.age", ManifestKey: "demo/" + ids[0] + ".manifest.json.age",
		CreatedAt: time.Date(2026, 11, 24, 10, 35, 44, 294218616, time.UTC), Encrypted: true, Note: "c-second",
	}
	got := snaps[0]
	got.ArchiveSize, got.ArchiveSHA256, got.RawSize, got.FileCount, got.ChromeVersion, got.Host, got.OS = 0, "", 0, 0, "", "", ""
	if !got.CreatedAt.Equal(want.CreatedAt) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("created_at %v, want %v", got.CreatedAt, want.CreatedAt)
	}
	got.CreatedAt = want.CreatedAt
	if got != want {
		t.Errorf("newest snapshot %+v, want %+v", got, want)
	}
	if snaps[0].ArchiveSize == 0 || snaps[0].FileCount == 0 || snaps[0].ChromeVersion == "" {
		t.Errorf("newest snapshot lost its sizes or Chrome version: %+v", snaps[0])
	}

	a, err := db.AbandonRuns(ctx, "demo")
	if err != nil || fmt.Sprint(a.Runs) != "[puqcs4]" || fmt.Sprint(a.Sessions) != "[m767hh]" {
		t.Fatalf("AbandonRuns = %+v, %v; want run puqcs4 and session m767hh", a, err)
	}
	runs, err := db.ListRuns(ctx, "demo", 0)
	if err != nil || len(runs) != 2 {
		t.Fatalf("ListRuns = %+v, %v; want 2", runs, err)
	}
	for _, r := range runs {
		wantStatus, wantCode, wantSnap := RunOK, "", "demo-20261124T103544Z-2mlt"
		if r.ID == "puqcs4" {
			wantStatus, wantCode, wantSnap = RunFailed, string(errcode.Interrupted), ""
		}
		if r.Status != wantStatus || r.ErrorCode != wantCode || r.SnapshotID != wantSnap || r.EndedAt.IsZero() || r.Host != "" {
			t.Errorf("run %+v: want status %s, error %q, snapshot %q, an end and no host", r, wantStatus, wantCode, wantSnap)
		}
	}
	events, err := db.ListEvents(ctx, EventFilter{Profile: "demo"})
	if err != nil || len(events) != 12 {
		t.Fatalf("ListEvents = %d events, %v; want the 11 it had and the killed session's end", len(events), err)
	}
	if e := events[0]; e.SessionID != "m767hh" || e.Kind != EventSessionEnd {
		t.Errorf("newest event %+v, want the session_end of m767hh", e)
	}
	if e := events[len(events)-1]; e.ID != 1 || e.Kind != EventSessionStart || e.SessionID != "nvvssh" {
		t.Errorf("oldest event %+v, want id 1, the session_start of nvvssh", e)
	}
}
