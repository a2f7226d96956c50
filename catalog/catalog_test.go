package catalog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"director/errcode"
	"director/internal/proc"
)

func openTemp(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "home", "director.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenCreatesPrivateWALCatalog(t *testing.T) {
	ctx := context.Background()
	home := filepath.Join(t.TempDir(), "home")
	path := filepath.Join(home, "director.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.InsertSnapshot(ctx, snap("s1", "p", time.Now())); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		path string
		want os.FileMode
	}{{home, 0o700}, {path, 0o600}, {path + "-wal", 0o600}, {path + "-shm", 0o600}} {
		st, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != c.want {
			t.Errorf("%s: mode %o, want %o", filepath.Base(c.path), got, c.want)
		}
	}

	var mode string
	if err := db.sql.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var fk, busy int
	if err := db.sql.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v; want 1", fk, err)
	}
	if err := db.sql.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil || busy < 1000 {
		t.Errorf("busy_timeout = %d, %v; want >= 1000", busy, err)
	}
	if v, err := db.Version(ctx); err != nil || v != SchemaVersion() || v < 1 {
		t.Errorf("Version = %d, %v; want %d", v, err, SchemaVersion())
	}
}

func TestOpenTightensExistingPermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "director.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %o, want 600", st.Mode().Perm())
	}
}

func TestReopenKeepsDataAndVersion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "director.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.InsertSnapshot(ctx, snap("s1", "p", time.Now())); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	if _, err := db.GetSnapshot(ctx, testStore, "s1"); err != nil {
		t.Errorf("after reopen: %v", err)
	}
}

func TestOpenRefusesNewerOrForeignDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	newer := filepath.Join(dir, "newer.db")
	db, err := Open(ctx, newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.sql.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion()+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()

	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("this is not a database\n", 400)), 0o600); err != nil {
		t.Fatal(err)
	}

	foreign := filepath.Join(dir, "foreign.db")
	raw, err := sql.Open("sqlite3", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("CREATE TABLE snapshots (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	for _, c := range []struct {
		name, path, msg, hint string
	}{
		{"newer schema", newer, "newer than this director", "upgrade director"},
		{"newer schema, going back", newer, "newer than this director", "-wal and -shm files if they are there (the run history and the audit log stay in it) and run `director catalog rebuild`"},
		{"newer schema, unsaved logins first", newer, "newer than this director", "first snapshot, with the newer director, every profile its `director profile list` says holds a login no snapshot has"},
		{"not sqlite", garbage, "cannot read the catalog", "catalog rebuild"},
		{"foreign tables", foreign, "migration", "catalog rebuild"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := Open(ctx, c.path)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
			if h := errcode.HintOf(err); !strings.Contains(h, c.hint) {
				t.Errorf("hint %q does not say %q", h, c.hint)
			}
		})
	}

	// The failed migration was rolled back as a whole.
	raw, err = sql.Open("sqlite3", foreign)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n, v int
	if err := raw.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'profiles'").Scan(&n); err != nil || n != 0 {
		t.Errorf("half-applied migration left a profiles table (%d, %v)", n, err)
	}
	if err := raw.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != 0 {
		t.Errorf("user_version = %d, %v after a failed migration; want 0", v, err)
	}
}

// testStore is the store of the rows snap makes.
const testStore = "file:///var/lib/director/snapshots"

func snap(id, profile string, at time.Time) Snapshot {
	return Snapshot{
		ID: id, Store: testStore, Profile: profile, ObjectKey: profile + "/" + id + ".tar.zst", ManifestKey: profile + "/" + id + ".manifest.json",
		CreatedAt: at, ArchiveSize: 1234, ArchiveSHA256: strings.Repeat("ab", 32), RawSize: 99999, FileCount: 42,
		ChromeVersion: "131.0.6778.85", Host: "host1", OS: "linux", Note: "first login", Encrypted: true,
	}
}

func TestSnapshotRoundTripExact(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	cases := []time.Time{
		time.Date(2026, 11, 22, 3, 4, 5, 123456789, zone),
		time.Date(2026, 11, 22, 3, 4, 5, 100000000, time.UTC), // trailing zeros
		time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC),
		time.Now(), // with a monotonic reading
	}
	for i, at := range cases {
		in := snap(fmt.Sprintf("s%d", i), "p", at)
		in.Encrypted = i%2 == 0
		if err := db.InsertSnapshot(ctx, in); err != nil {
			t.Fatal(err)
		}
		out, err := db.GetSnapshot(ctx, testStore, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !out.CreatedAt.Equal(at) || out.CreatedAt.Location() != time.UTC {
			t.Errorf("created_at %v came back as %v", at, out.CreatedAt)
		}
		out.CreatedAt = in.CreatedAt
		if out != in {
			t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
		}
	}
}

func TestSnapshotQueries(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Sub-second differences must order correctly too.
	rows := []Snapshot{
		snap("a1", "alpha", base),
		snap("a2", "alpha", base.Add(900*time.Millisecond)),
		snap("a3", "alpha", base.Add(1100*time.Millisecond)),
		snap("b1", "beta", base.Add(time.Hour)),
	}
	for _, s := range rows {
		if err := db.InsertSnapshot(ctx, s); err != nil {
			t.Fatal(err)
		}
	}

	ids := func(ss []Snapshot) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct{ profile, want string }{
		{"alpha", "a3,a2,a1"}, {"beta", "b1"}, {"", "b1,a3,a2,a1"}, {"nobody", ""},
	} {
		got, err := db.ListSnapshots(ctx, testStore, c.profile)
		if err != nil {
			t.Fatal(err)
		}
		if ids(got) != c.want {
			t.Errorf("ListSnapshots(%q) = %s, want %s", c.profile, ids(got), c.want)
		}
	}

	latest, err := db.LatestSnapshot(ctx, testStore, "alpha")
	if err != nil || latest.ID != "a3" {
		t.Errorf("LatestSnapshot(alpha) = %s, %v; want a3", latest.ID, err)
	}
	_, err = db.LatestSnapshot(ctx, testStore, "nobody")
	if errcode.Of(err) != errcode.SnapshotNotFound || !strings.Contains(errcode.HintOf(err), "director profile snapshot nobody") {
		t.Errorf("LatestSnapshot(nobody) = %v (hint %q)", err, errcode.HintOf(err))
	}
	_, err = db.GetSnapshot(ctx, testStore, "zzz")
	if errcode.Of(err) != errcode.SnapshotNotFound || !strings.Contains(errcode.HintOf(err), "director profile snapshots <profile>") {
		t.Errorf("GetSnapshot(missing) = %v (hint %q)", err, errcode.HintOf(err))
	}

	// Duplicate insert fails and changes nothing; upsert replaces.
	dup := snap("a1", "alpha", base)
	dup.Note = "changed"
	if err := db.InsertSnapshot(ctx, dup); !errors.Is(err, ErrExists) || errcode.HintOf(err) == "" {
		t.Errorf("duplicate insert: %v, want ErrExists with a hint", err)
	}
	if got, _ := db.GetSnapshot(ctx, testStore, "a1"); got.Note != "first login" {
		t.Errorf("duplicate insert changed the row: note %q", got.Note)
	}
	if err := db.UpsertSnapshot(ctx, dup); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.GetSnapshot(ctx, testStore, "a1"); got.Note != "changed" {
		t.Errorf("upsert did not replace: note %q", got.Note)
	}
	if err := db.UpsertSnapshot(ctx, snap("c1", "gamma", base)); err != nil {
		t.Fatal(err)
	}

	set, err := db.SnapshotIDs(ctx, testStore)
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 5 || !set["a1"] || !set["c1"] || set["zzz"] {
		t.Errorf("SnapshotIDs = %v", set)
	}

	if err := db.DeleteSnapshot(ctx, testStore, "a3"); err != nil {
		t.Fatal(err)
	}
	if latest, _ := db.LatestSnapshot(ctx, testStore, "alpha"); latest.ID != "a2" {
		t.Errorf("after delete, latest = %s, want a2", latest.ID)
	}
	if err := db.DeleteSnapshot(ctx, testStore, "a3"); errcode.Of(err) != errcode.SnapshotNotFound {
		t.Errorf("second delete = %v, want snapshot_not_found", err)
	}
}

func TestSnapshotValidation(t *testing.T) {
	db := openTemp(t)
	ok := snap("x", "p", time.Now())
	for name, mut := range map[string]func(*Snapshot){
		"no id":      func(s *Snapshot) { s.ID = "" },
		"no profile": func(s *Snapshot) { s.Profile = "" },
		"no object":  func(s *Snapshot) { s.ObjectKey = "" },
		"no time":    func(s *Snapshot) { s.CreatedAt = time.Time{} },
	} {
		s := ok
		mut(&s)
		if err := db.InsertSnapshot(context.Background(), s); err == nil {
			t.Errorf("%s: insert succeeded", name)
		}
	}
}

func TestProfiles(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 5, time.UTC)
	if err := db.UpsertProfile(ctx, Profile{Name: "work", CreatedAt: t0, Note: "mail"}); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(48 * time.Hour)
	if err := db.TouchProfile(ctx, "work", t1); err != nil {
		t.Fatal(err)
	}
	p, err := db.GetProfile(ctx, "work")
	if err != nil {
		t.Fatal(err)
	}
	want := Profile{Name: "work", CreatedAt: t0, LastUsedAt: t1, Note: "mail"}
	if !p.CreatedAt.Equal(want.CreatedAt) || !p.LastUsedAt.Equal(want.LastUsedAt) || p.Note != want.Note {
		t.Errorf("got %+v, want %+v (creation kept, use recorded, note kept)", p, want)
	}
	// The unsaved mark: set (also on a profile without a row), then cleared.
	t2 := t1.Add(time.Hour)
	for _, c := range []struct {
		name string
		at   time.Time
	}{{"work", t2}, {"fresh", t2}, {"work", time.Time{}}} {
		if err := db.SetUnsaved(ctx, c.name, c.at); err != nil {
			t.Fatal(err)
		}
		p, err := db.GetProfile(ctx, c.name)
		if err != nil || !p.UnsavedSince.Equal(c.at) {
			t.Errorf("SetUnsaved(%s, %v): got %+v, %v", c.name, c.at, p, err)
		}
	}
	if err := db.DeleteProfile(ctx, "fresh"); err != nil {
		t.Fatal(err)
	}
	if err := db.UpsertProfile(ctx, Profile{Name: "alpha"}); err != nil {
		t.Fatal(err)
	}
	list, err := db.ListProfiles(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "alpha" || !list[0].LastUsedAt.IsZero() {
		t.Errorf("ListProfiles = %+v, %v", list, err)
	}
	if err := db.DeleteProfile(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetProfile(ctx, "work"); errcode.Of(err) != errcode.ProfileNotFound {
		t.Errorf("after delete: %v, want profile_not_found", err)
	}
	if err := db.DeleteProfile(ctx, "work"); err != nil {
		t.Errorf("deleting a missing profile row: %v", err)
	}
}

func TestRunsAndSessions(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	if err := db.InsertSnapshot(ctx, snap("snap1", "work", time.Now())); err != nil {
		t.Fatal(err)
	}
	run, err := db.StartRun(ctx, Run{Workflow: "refresh", File: "/etc/refresh.yaml", Profile: "work"})
	if err != nil {
		t.Fatal(err)
	}
	if !ValidID(run.ID) || run.Status != RunRunning || run.StartedAt.IsZero() {
		t.Errorf("StartRun filled %+v", run)
	}
	inc, err := db.StartRun(ctx, Run{Workflow: "incognito"})
	if err != nil {
		t.Fatal(err)
	}

	sess, err := db.StartSession(ctx, Session{Profile: "work", RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	if !ValidID(sess.ID) || sess.State != SessionActive {
		t.Errorf("StartSession filled %+v", sess)
	}
	if _, err := db.StartSession(ctx, Session{ID: "BAD-ID"}); errcode.Of(err) != errcode.InvalidInput {
		t.Errorf("bad id: %v", err)
	}
	if _, err := db.StartSession(ctx, Session{ID: sess.ID}); !errors.Is(err, ErrExists) {
		t.Errorf("duplicate session id: %v", err)
	}
	if _, err := db.StartSession(ctx, Session{RunID: "nosuch"}); err == nil {
		t.Errorf("session with an unknown run id was accepted")
	}

	end := time.Date(2026, 5, 5, 5, 5, 5, 5, time.UTC)
	if err := db.EndSession(ctx, sess.ID, SessionEnd{Reason: "idle_timeout", ActionCount: 7, EndedAt: end}); err != nil {
		t.Fatal(err)
	}
	if err := db.EndSession(ctx, "aaaaaa", SessionEnd{Reason: "completed"}); errcode.Of(err) != errcode.SessionNotFound {
		t.Errorf("ending a missing session: %v", err)
	}
	got, err := db.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != SessionEnded || got.EndReason != "idle_timeout" || got.ActionCount != 7 ||
		!got.EndedAt.Equal(end) || got.RunID != run.ID || got.Profile != "work" {
		t.Errorf("ended session = %+v", got)
	}

	if err := db.FinishRun(ctx, run.ID, RunEnd{Status: RunOK, SnapshotID: "snap1"}); err != nil {
		t.Fatal(err)
	}
	if err := db.FinishRun(ctx, inc.ID, RunEnd{Status: RunHumanRequired, ErrorCode: string(errcode.HumanRequired)}); err != nil {
		t.Fatal(err)
	}
	if err := db.FinishRun(ctx, "nosuch", RunEnd{Status: RunOK}); err == nil {
		t.Error("finishing a missing run succeeded")
	}
	r, err := db.GetRun(ctx, run.ID)
	if err != nil || r.Status != RunOK || r.SnapshotID != "snap1" || r.EndedAt.IsZero() || r.Profile != "work" {
		t.Errorf("finished run = %+v, %v", r, err)
	}
	r, _ = db.GetRun(ctx, inc.ID)
	if r.Profile != "" || r.ErrorCode != "human_required" || r.SnapshotID != "" {
		t.Errorf("incognito run = %+v", r)
	}
	runs, err := db.ListRuns(ctx, "work", 0)
	if err != nil || len(runs) != 1 || runs[0].ID != run.ID {
		t.Errorf("ListRuns(work) = %+v, %v", runs, err)
	}

	// Pruning the snapshot a run took keeps the run and its history.
	if err := db.DeleteSnapshot(ctx, testStore, "snap1"); err != nil {
		t.Fatal(err)
	}
	r, err = db.GetRun(ctx, run.ID)
	if err != nil || r.SnapshotID != "snap1" {
		t.Errorf("after prune, run = %+v, %v", r, err)
	}
	ss, err := db.ListSessions(ctx, "", 10)
	if err != nil || len(ss) != 1 {
		t.Errorf("ListSessions = %+v, %v", ss, err)
	}
}

func TestEvents(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	base := time.Date(2026, 2, 2, 2, 2, 2, 0, time.UTC)
	add := func(i int, profile, session string) {
		t.Helper()
		err := db.AddEvent(ctx, Event{
			At: base.Add(time.Duration(i) * time.Millisecond), SessionID: session, Profile: profile,
			Kind: EventAction, Action: "click", Tab: "t1", Domain: "example.com", DurationMS: int64(i), ResultCode: "ok",
			Detail: fmt.Sprint(i),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 30; i++ {
		p, s := "alpha", "aaaaaa"
		if i%3 == 0 {
			p, s = "beta", "bbbbbb"
		}
		add(i, p, s)
	}
	details := func(es []Event) string {
		var out []string
		for _, e := range es {
			out = append(out, e.Detail)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		f    EventFilter
		want string
	}{
		{EventFilter{Limit: 3}, "29,28,27"},
		{EventFilter{Profile: "beta", Limit: 3}, "27,24,21"},
		{EventFilter{Session: "aaaaaa", Limit: 2}, "29,28"},
		{EventFilter{Profile: "alpha", Session: "bbbbbb"}, ""},
	} {
		got, err := db.ListEvents(ctx, c.f)
		if err != nil {
			t.Fatal(err)
		}
		if details(got) != c.want {
			t.Errorf("ListEvents(%+v) = %s, want %s", c.f, details(got), c.want)
		}
	}
	all, _ := db.ListEvents(ctx, EventFilter{})
	if len(all) != 30 || all[0].Kind != EventAction || all[0].Domain != "example.com" || all[0].DurationMS != 29 ||
		!all[0].At.Equal(base.Add(29*time.Millisecond)) {
		t.Errorf("ListEvents(all): %d events, first %+v", len(all), all[0])
	}

	n, err := db.TrimEvents(ctx, 10)
	if err != nil || n != 20 {
		t.Fatalf("TrimEvents(10) = %d, %v; want 20", n, err)
	}
	left, _ := db.ListEvents(ctx, EventFilter{})
	if len(left) != 10 || left[9].Detail != "20" {
		t.Errorf("after trim: %s, want 29..20", details(left))
	}
	if n, err := db.TrimEvents(ctx, 0); err != nil || n != 0 {
		t.Errorf("TrimEvents(default) = %d, %v; want 0 deleted", n, err)
	}

	if err := db.AddEvent(ctx, Event{Kind: ""}); err == nil {
		t.Error("event without a kind accepted")
	}
	long := strings.Repeat("é", maxDetail) // 2 bytes each
	if err := db.AddEvent(ctx, Event{Kind: EventSessionEnd, Detail: long}); err != nil {
		t.Fatal(err)
	}
	last, _ := db.ListEvents(ctx, EventFilter{Limit: 1})
	if len(last[0].Detail) > maxDetail || !strings.HasPrefix(long, last[0].Detail) || last[0].At.IsZero() {
		t.Errorf("long detail stored as %d bytes, at %v", len(last[0].Detail), last[0].At)
	}
}

func TestCancelledContext(t *testing.T) {
	db := openTemp(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := db.InsertSnapshot(ctx, snap("s", "p", time.Now())); err == nil {
		t.Error("insert with a cancelled context succeeded")
	}
	if _, err := Open(ctx, filepath.Join(t.TempDir(), "x.db")); err == nil {
		t.Error("Open with a cancelled context succeeded")
	}
}

// Two processes (here: two *DB on one file) writing at once must both
// succeed; run with -race.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared", "director.db")

	// Both open a brand-new file at the same moment: migrations run once.
	var dbs [2]*DB
	var wg sync.WaitGroup
	var openErr [2]error
	for i := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dbs[i], openErr[i] = Open(ctx, path)
		}()
	}
	wg.Wait()
	for i, err := range openErr {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer dbs[i].Close()
	}

	const perWorker = 25
	const workersPerDB = 3
	errs := make(chan error, 2*workersPerDB*perWorker*3)
	for d, db := range dbs {
		for w := 0; w < workersPerDB; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < perWorker; i++ {
					id := fmt.Sprintf("d%d-w%d-%d", d, w, i)
					if err := db.InsertSnapshot(ctx, snap(id, "shared", time.Now())); err != nil {
						errs <- fmt.Errorf("insert %s: %w", id, err)
					}
					if err := db.AddEvent(ctx, Event{Kind: EventAction, Profile: "shared", Detail: id}); err != nil {
						errs <- fmt.Errorf("event %s: %w", id, err)
					}
					run, err := db.StartRun(ctx, Run{ID: fmt.Sprintf("r%d%d%03d", d, w, i), Workflow: "w", Profile: "shared"})
					if err == nil {
						err = db.FinishRun(ctx, run.ID, RunEnd{Status: RunOK, SnapshotID: id})
					}
					if err != nil {
						errs <- fmt.Errorf("run %s: %w", id, err)
					}
					if _, err := db.TrimEvents(ctx, 1000); err != nil {
						errs <- fmt.Errorf("trim: %w", err)
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := 2 * workersPerDB * perWorker
	for i, db := range dbs {
		ids, err := db.SnapshotIDs(ctx, testStore)
		if err != nil || len(ids) != want {
			t.Errorf("db %d sees %d snapshots (%v), want %d", i, len(ids), err, want)
		}
		evs, err := db.ListEvents(ctx, EventFilter{Profile: "shared"})
		if err != nil || len(evs) != want {
			t.Errorf("db %d sees %d events (%v), want %d", i, len(evs), err, want)
		}
	}
	if v, _ := dbs[1].Version(ctx); v != SchemaVersion() {
		t.Errorf("version %d after concurrent open", v)
	}
}

// helperEnv names the catalog a re-executed test binary writes to.
const helperEnv = "DIRECTOR_CATALOG_TEST_WRITER"

// TestHelperWriter is the second process of TestTwoProcesses; it does
// nothing in a normal run.
func TestHelperWriter(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		return
	}
	ctx := context.Background()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < 100; i++ {
		if err := db.InsertSnapshot(ctx, snap(fmt.Sprintf("child-%d", i), "shared", time.Now())); err != nil {
			t.Fatal(err)
		}
		if err := db.AddEvent(ctx, Event{Kind: EventAction, Profile: "shared"}); err != nil {
			t.Fatal(err)
		}
	}
}

// Two real processes open a new catalog at the same moment and write at
// once: both succeed and every row lands.
func TestTwoProcesses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "director.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	var childOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &childOut, &childOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Keep writing for as long as the child runs, so the two overlap.
	var childErr error
	parent := 0
	for running := true; running || parent < 100; parent++ {
		select {
		case childErr = <-done:
			running = false
		default:
		}
		if err := db.InsertSnapshot(ctx, snap(fmt.Sprintf("parent-%d", parent), "shared", time.Now())); err != nil {
			t.Fatal(err)
		}
		if err := db.AddEvent(ctx, Event{Kind: EventAction, Profile: "shared"}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("this process wrote %d snapshots while the other wrote 100", parent)
	if childErr != nil {
		t.Fatalf("second process: %v\n%s", childErr, childOut.String())
	}
	ids, err := db.SnapshotIDs(ctx, testStore)
	if err != nil || len(ids) != parent+100 || !ids["child-99"] {
		t.Errorf("%d snapshots, want %d + 100 (%v)", len(ids), parent, err)
	}
	evs, err := db.ListEvents(ctx, EventFilter{Profile: "shared"})
	if err != nil || len(evs) != parent+100 {
		t.Errorf("%d events, want %d (%v)", len(evs), parent+100, err)
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewID()
		if !ValidID(id) {
			t.Fatalf("NewID() = %q is not [a-z2-7]{6}", id)
		}
		seen[id] = true
	}
	if len(seen) < 990 {
		t.Errorf("only %d distinct ids of 1000", len(seen))
	}
	for _, bad := range []string{"", "abcde", "abcdefg", "abcde1", "ABCDEF", "abc-ef"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
}

// TestCloseDeadRuns: the running runs of this host whose process is gone
// (a dead pid, or a pid now held by a process that started at another
// time) are closed as failed, interrupted, with their active sessions ended
// and given a session_end event; a live run, a run of another host and a
// run recorded without its process stay running.
func TestCloseDeadRuns(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	self, err := proc.Self()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^$")
	if err := child.Run(); err != nil { // exited and reaped: its pid is dead
		t.Fatal(err)
	}
	dead := child.Process.Pid
	cases := []struct {
		name       string
		run        Run
		wantClosed bool
	}{
		{"live", Run{Host: self.Host, PID: self.PID, ProcStart: self.Start}, false},
		{"dead pid", Run{Host: self.Host, PID: dead, ProcStart: self.Start}, true},
		{"dead pid, start unknown", Run{Host: self.Host, PID: dead}, true},
		// Only Linux records a start that could differ.
		{"reused pid", Run{Host: self.Host, PID: self.PID, ProcStart: self.Start + "0"}, runtime.GOOS == "linux"},
		{"another host", Run{Host: self.Host + ".elsewhere", PID: dead}, false},
		{"recorded before migration 0004", Run{Host: "", PID: 0}, false},
	}
	type opened struct{ run, session string }
	ids := make([]opened, len(cases))
	for i, c := range cases {
		r := c.run
		r.Workflow = c.name
		if c.run.PID == 0 {
			r.ID = NewID()
			// StartRun records this process when PID is 0: write the row
			// the way a director before migration 0004 did.
			if _, err := db.sql.ExecContext(ctx, `INSERT INTO runs (id, workflow, status, started_at) VALUES (?, ?, ?, ?)`,
				r.ID, r.Workflow, RunRunning, fmtTime(now())); err != nil {
				t.Fatal(err)
			}
		} else if r, err = db.StartRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		s, err := db.StartSession(ctx, Session{RunID: r.ID}) // incognito
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = opened{r.ID, s.ID}
	}

	a, err := db.CloseDeadRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := db.GetRun(ctx, ids[i].run)
			if err != nil {
				t.Fatal(err)
			}
			s, err := db.GetSession(ctx, ids[i].session)
			if err != nil {
				t.Fatal(err)
			}
			evs, err := db.ListEvents(ctx, EventFilter{Session: ids[i].session})
			if err != nil {
				t.Fatal(err)
			}
			reported := slices.Contains(a.Runs, r.ID) && slices.Contains(a.Sessions, s.ID)
			if !c.wantClosed {
				if r.Status != RunRunning || s.State != SessionActive || len(evs) != 0 || reported {
					t.Errorf("run %+v, session %+v, events %+v: want them left open", r, s, evs)
				}
				return
			}
			if r.Status != RunFailed || r.ErrorCode != string(errcode.Interrupted) || r.EndedAt.IsZero() {
				t.Errorf("run %+v: want failed, interrupted, with an end time", r)
			}
			if s.State != SessionEnded || s.EndReason != "failed" || !reported {
				t.Errorf("session %+v (reported %v): want ended, failed, and reported", s, reported)
			}
			if len(evs) != 1 || evs[0].Kind != EventSessionEnd || evs[0].ResultCode != string(errcode.Interrupted) {
				t.Errorf("events %+v: want one session_end, interrupted", evs)
			}
		})
	}
	// Once closed, a run is not closed again.
	if again, err := db.CloseDeadRuns(ctx); err != nil || len(again.Runs)+len(again.Sessions) != 0 {
		t.Errorf("second sweep: %+v, %v; want nothing", again, err)
	}
}

// TestMigrationRecordsRunProcess: a catalog of schema 3 gains the process
// columns of runs; its running run reads back without a process, and
// CloseDeadRuns, which cannot prove it dead, leaves it running.
func TestMigrationRecordsRunProcess(t *testing.T) {
	ctx := context.Background()
	db := openMigrated(t, 3, `INSERT INTO runs (id, workflow, status, started_at) VALUES ('aaaaaa', 'old', 'running', '2026-01-01T00:00:00.000000000Z')`)
	if a, err := db.CloseDeadRuns(ctx); err != nil || len(a.Runs) != 0 {
		t.Errorf("CloseDeadRuns = %+v, %v; want nothing closed", a, err)
	}
	r, err := db.GetRun(ctx, "aaaaaa")
	if err != nil || r.Status != RunRunning || r.Host != "" || r.PID != 0 || r.ProcStart != "" {
		t.Errorf("old run = %+v, %v; want it running, without a process", r, err)
	}
	r, err = db.StartRun(ctx, Run{Workflow: "new"})
	if self, _ := proc.Self(); err != nil || r.Host != self.Host || r.PID != self.PID || r.ProcStart != self.Start {
		t.Fatalf("StartRun = %+v, %v; want this process (%+v)", r, err, self)
	}
	if got, err := db.GetRun(ctx, r.ID); err != nil || got.Host != r.Host || got.PID != r.PID || got.ProcStart != r.ProcStart {
		t.Errorf("new run reads back as %+v, %v; want %+v", got, err, r)
	}
}
