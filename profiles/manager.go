package profiles

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"filippo.io/age"
	"github.com/gofrs/flock"

	"director/catalog"
	"director/encrypt"
	"director/errcode"
	"director/internal/shellquote"
	"director/launcher"
	"director/snapshot"
	"director/storage"
)

// DefaultMaxSize bounds an archive's size: 500 MiB (the reference design's
// 500 MB cap, read as binary).
const DefaultMaxSize int64 = 500 << 20

// DefaultLockWait is how long a CLI call waits for another one on the same
// profile before it fails with profile_in_use.
const DefaultLockWait = 10 * time.Second

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ValidateName checks a profile name against ^[a-z0-9][a-z0-9._-]{0,62}$.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return errcode.New(errcode.InvalidInput, "invalid profile name %q", name).
			WithHint("use 1-63 characters: lower-case letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	return nil
}

// Progress shows the progress of one long transfer. The CLI supplies a bar
// on a terminal; nil means no progress. A restore or verify counts the
// archive's bytes through Reader; a snapshot counts the files' bytes as
// they are archived with Add.
type Progress interface {
	Reader(r io.Reader) io.Reader
	Add(n int64)
	Finish()
}

// Manager is the entry point of every profile use-case. Its zero value is
// not usable: set at least Root, Store and Catalog.
type Manager struct {
	Root    string        // directory holding the profiles, <home>/browser-profiles
	Home    string        // director's home, which a missing catalog's messages name; "" says "here"
	Store   storage.Store // where archives live
	Catalog *catalog.DB   // snapshot metadata
	Log     *slog.Logger  // nil discards

	Recipients []age.Recipient // encrypt archives to these; empty means plaintext
	Identities []age.Identity  // decrypt archives with these
	// UnusedIdentity is why an identity file was passed over (the default
	// one, readable by others): a snapshot that then has no identity to
	// decrypt it names this reason and its hint.
	UnusedIdentity error
	// InsecureNoEncryption allows plaintext uploads to a remote store.
	InsecureNoEncryption bool

	LockWait time.Duration // 0 means DefaultLockWait; negative means fail fast
	MaxSize  int64         // archive size bound; 0 means DefaultMaxSize
	// MaxUnpacked bounds what an archive unpacks to (the decompression-bomb
	// guard of restore and verify; snapshot refuses a profile over it up
	// front); 0 means snapshot.DefaultMaxUnpackedBytes (4 GiB).
	MaxUnpacked int64

	// NewProgress, when set, returns a progress display for a transfer of
	// total bytes (-1 when unknown): a restore's or verify's archive, or the
	// files a snapshot archives (known once the profile has been walked).
	NewProgress func(label string, total int64) Progress
	// ChromeVersion, when set, returns the version of the Chrome that will
	// open restored profiles; restore refuses a snapshot written by a newer
	// Chrome unless forced (Chrome's downgrade handling can wipe the profile).
	// "" with no error skips the check (no Chrome here to ask); an error
	// fails the restore (a Chrome the user named cannot answer).
	ChromeVersion func(ctx context.Context) (string, error)
	// Now returns the current time; nil means time.Now.
	Now func() time.Time

	// lockTaken, when set, runs right after Lock takes a flock, before it
	// checks the path: tests play the other side of the unlink race.
	lockTaken func(path string)
}

func (m *Manager) log() *slog.Logger {
	if m.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return m.Log
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now().UTC()
	}
	return time.Now().UTC()
}

func (m *Manager) maxSize() int64 {
	if m.MaxSize > 0 {
		return m.MaxSize
	}
	return DefaultMaxSize
}

func (m *Manager) maxUnpacked() int64 {
	if m.MaxUnpacked > 0 {
		return m.MaxUnpacked
	}
	return snapshot.DefaultMaxUnpackedBytes
}

func (m *Manager) progress(label string, total int64) Progress {
	if m.NewProgress == nil {
		return nil
	}
	return m.NewProgress(label, total)
}

// Dir returns the profile's user-data-dir.
func (m *Manager) Dir(name string) string { return filepath.Join(m.Root, name) }

// noCatalog says that the Manager has no catalog, naming the home it has
// none in, so that a mistyped --home shows.
func (m *Manager) noCatalog() string {
	if m.Home == "" {
		return "there is no catalog here yet"
	}
	return fmt.Sprintf("there is no catalog in %s yet", m.Home)
}

func (m *Manager) ensureRoot() error {
	if err := m.checkRoot(); err != nil {
		return err
	}
	if err := os.MkdirAll(m.Root, 0o700); err != nil {
		return errcode.Hinted(err, errcode.Internal, "check the permissions of "+filepath.Dir(m.Root), "creating profile root %s", m.Root)
	}
	return nil
}

// checkRoot refuses a profile root that exists and is not a directory (a
// symlink to one is fine: the root may live on another disk). It creates
// nothing.
func (m *Manager) checkRoot() error {
	st, err := os.Stat(m.Root)
	if err == nil && !st.IsDir() {
		return errcode.New(errcode.InvalidInput, "%s is not a directory, and director keeps its profiles there", m.Root).
			WithHint("move it away (`mv %s %s`), then retry", shellquote.Quote(m.Root), shellquote.Quote(m.Root+".aside"))
	}
	return nil
}

// Exists reports whether profile name has its directory. An entry of the
// profile root with the profile's name that is not a real directory (a
// file, a symlink even to a directory elsewhere) is no profile, and every
// command refuses it with the same invalid_input: a restore swaps the entry
// itself, a delete renames it, and what a symlink points to may be anything.
func (m *Manager) Exists(name string) (bool, error) {
	if err := ValidateName(name); err != nil {
		return false, err
	}
	if err := m.checkRoot(); err != nil {
		return false, err
	}
	dir := m.Dir(name)
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return false, nil
	case err != nil:
		return false, errcode.Hinted(err, errcode.Internal, "check the permissions of "+m.Root, "reading profile %q", name)
	case st.IsDir():
		return true, nil
	}
	what := "a " + st.Mode().Type().String()
	switch {
	case st.Mode().IsRegular():
		what = "a regular file"
	case st.Mode()&fs.ModeSymlink != 0:
		what = "a symbolic link"
		if target, err := os.Readlink(dir); err == nil {
			what += " to " + target
		}
	}
	return false, errcode.New(errcode.InvalidInput, "%s is %s, not a directory: director takes only a plain directory there as profile %q", dir, what, name).
		WithHint("move it away (`mv %s %s`), then retry", shellquote.Quote(dir), shellquote.Quote(filepath.Join(m.Root, "."+name+".aside")))
}

// CheckCreate fails as Create would on a bad name, a profile root that is
// not a directory, or a profile that is already there. It writes nothing:
// the CLI asks it before it creates the home and the catalog.
func (m *Manager) CheckCreate(name string) error {
	exists, err := m.Exists(name)
	if err != nil {
		return err
	}
	if exists {
		return m.alreadyExists(name)
	}
	return nil
}

func (m *Manager) alreadyExists(name string) error {
	return errcode.New(errcode.InvalidInput, "profile %q already exists at %s", name, m.Dir(name)).
		WithHint("open it with `director profile open %s`, or pick another name", name)
}

// Create makes an empty profile directory (0700).
func (m *Manager) Create(ctx context.Context, name string) error {
	if err := m.CheckCreate(name); err != nil {
		return err
	}
	if err := m.ensureRoot(); err != nil {
		return err
	}
	dir := m.Dir(name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return m.CheckCreate(name) // made meanwhile: say what it is
		}
		return errcode.Hinted(err, errcode.Internal, "check the permissions of "+m.Root, "creating profile %q", name)
	}
	err := m.Catalog.TouchProfile(ctx, name, m.now())
	if err == nil {
		// An empty profile holds no login: an unsaved mark left by one of
		// the same name (removed by hand, or by a delete the store
		// stopped) would keep it from a run's restore: latest.
		err = m.Catalog.SetUnsaved(ctx, name, time.Time{})
	}
	if err != nil {
		// Not half made: a retry would find the directory and refuse,
		// and an old unsaved mark would stay.
		if rerr := os.Remove(dir); rerr != nil {
			m.log().Warn("cannot remove the directory of a profile whose creation failed", "dir", dir, "err", rerr)
		}
		return err
	}
	return nil
}

// Path returns the user-data-dir of an existing profile; a profile that
// does not exist is profile_not_found.
func (m *Manager) Path(name string) (string, error) {
	if err := ValidateName(name); err != nil {
		return "", err
	}
	if err := m.requireDir(name); err != nil {
		return "", err
	}
	return m.Dir(name), nil
}

// requireDir returns profile_not_found when the profile has no directory,
// and Exists's refusal of an entry that is not a real directory.
func (m *Manager) requireDir(name string) error {
	exists, err := m.Exists(name)
	if err != nil || exists {
		return err
	}
	return errcode.New(errcode.ProfileNotFound, "profile %q does not exist", name).
		WithHint("create it with `director profile create %s` or restore it with `director profile restore %s latest`", name, name)
}

// Lock is a held profile lock.
type Lock struct {
	name string
	path string // the lock file, <root>/.<name>.lock
	dir  string // the profile directory
	fl   *flock.Flock

	mu       sync.Mutex
	released bool
}

// Name is the locked profile.
func (l *Lock) Name() string { return l.name }

// Unlock releases the lock; it is safe to call more than once. When the
// profile directory does not exist (a failed restore of a new profile, a
// delete), it first removes the lock file, so that no .NAME.lock outlives
// the profile. It removes it while still holding the lock: a locker that
// opened the old file meanwhile gets a lock on an unlinked inode, sees that
// the path no longer names it, and retries on a fresh file (see Lock).
func (l *Lock) Unlock() {
	if l == nil || l.fl == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return
	}
	l.released = true
	if _, err := os.Lstat(l.dir); errors.Is(err, fs.ErrNotExist) {
		_ = os.Remove(l.path) // best effort: a lock file left behind is harmless
	}
	_ = l.fl.Unlock()
}

// Lock takes the profile's exclusive lock, waiting up to wait (0 means the
// Manager's LockWait; negative fails fast). The lock file lives beside the
// profile, so that it survives a restore's directory swap.
//
// Because Unlock removes the lock file of a profile that does not exist, a
// flock alone is not enough: after taking it, Lock checks that the path still
// names the file it locked (stat against fstat) and otherwise drops that
// stale lock and tries again on the current file.
func (m *Manager) Lock(ctx context.Context, name string, wait time.Duration) (*Lock, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := m.ensureRoot(); err != nil {
		return nil, err
	}
	if wait == 0 {
		wait = m.LockWait
		if wait == 0 {
			wait = DefaultLockWait
		}
	}
	path := filepath.Join(m.Root, "."+name+".lock")
	lctx, cancel := ctx, context.CancelFunc(func() {})
	if wait > 0 {
		lctx, cancel = context.WithTimeout(ctx, wait)
	}
	defer cancel()
	for {
		fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
		var ok bool
		var err error
		if wait < 0 {
			ok, err = fl.TryLock()
		} else {
			ok, err = fl.TryLockContext(lctx, 50*time.Millisecond)
			if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				err = nil
			}
		}
		if err != nil {
			return nil, errcode.Hinted(err, errcode.Internal, "check that "+m.Root+" is writable by you", "locking profile %q", name)
		}
		if !ok {
			return nil, errcode.New(errcode.ProfileInUse, "profile %q is in use by another director command", name).
				WithHint("wait for the other snapshot, restore, run or `director profile open %s` on it to finish, then retry", name)
		}
		if m.lockTaken != nil {
			m.lockTaken(path)
		}
		same, err := lockedFileIsPath(fl, path)
		if err != nil {
			_ = fl.Unlock()
			return nil, errcode.Hinted(err, errcode.Internal, "check that "+m.Root+" is readable by you", "locking profile %q", name)
		}
		if same {
			m.sweep(name)
			return &Lock{name: name, path: path, dir: m.Dir(name), fl: fl}, nil
		}
		// The previous holder removed the file we locked: lock the new one.
		_ = fl.Unlock()
	}
}

// lockedFileIsPath reports whether path still names the file fl holds
// locked (same device and inode), which is false when the last holder
// unlinked it, possibly creating another one since.
func lockedFileIsPath(fl *flock.Flock, path string) (bool, error) {
	held, err := fl.Stat() // fstat of the locked descriptor
	if err != nil {
		return false, err
	}
	cur, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(held, cur), nil
}

// lockFor returns held when it locks name, or takes a fresh lock.
func (m *Manager) lockFor(ctx context.Context, name string, held *Lock) (*Lock, func(), error) {
	if held != nil {
		if held.name != name {
			return nil, nil, errcode.New(errcode.Internal, "lock for %q used for %q", held.name, name)
		}
		return held, func() {}, nil
	}
	l, err := m.Lock(ctx, name, 0)
	if err != nil {
		return nil, nil, err
	}
	return l, l.Unlock, nil
}

// sweep removes what a restore or delete of the profile left beside it when
// it was killed (kill -9, a crash, a power cut): the half-extracted or
// replaced trees of a restore (snapshot.Leftovers) and the renamed tree of a
// delete. They hold the profile's cookies and may be large. The caller holds
// the profile's lock, so none of them belongs to a running command; a tree
// that cannot be removed is logged and tried again next time.
func (m *Manager) sweep(name string) {
	left, err := snapshot.Leftovers(m.Dir(name))
	if err != nil {
		m.log().Warn("could not look for what an interrupted restore left", "profile", name, "err", err)
	}
	trash, _ := filepath.Glob(filepath.Join(m.Root, "."+name+".deleted-"+strings.Repeat("[a-z2-7]", deletedSuffixLen)))
	for _, p := range append(left, trash...) {
		if err := snapshot.RemoveTree(p); err != nil {
			m.log().Warn("could not remove what an interrupted restore or delete left", "profile", name, "path", p, "err", err)
			continue
		}
		m.log().Info("removed what an interrupted restore or delete left", "profile", name, "path", p)
	}
}

// deletedSuffixLen is the length of the random part of ".<name>.deleted-*".
const deletedSuffixLen = 6

// refuseIfRunning fails with profile_in_use when Chrome runs on the profile,
// and removes stale runtime files otherwise.
func (m *Manager) refuseIfRunning(name string) error {
	dir := m.Dir(name)
	if exists, err := m.Exists(name); err != nil || !exists {
		return err // nothing there to run on, or not a profile
	}
	info, inUse, err := launcher.ProfileInUse(dir)
	if err != nil {
		return errcode.Wrap(err, errcode.Internal, "checking whether Chrome runs on %q", name)
	}
	if inUse {
		return errcode.New(errcode.ProfileInUse, "Chrome is running on profile %q (%s)", name, info.Reason).
			WithHint("close that Chrome window (or let the `director profile open %s` or the workflow run on it finish), then retry", name)
	}
	removed, err := launcher.CleanRuntimeFiles(dir)
	if err != nil {
		return errcode.Wrap(err, errcode.Internal, "removing stale Chrome runtime files from %q", name)
	}
	if len(removed) > 0 {
		m.log().Info("removed stale Chrome runtime files", "profile", name, "files", removed)
	}
	return nil
}

// Info describes a local profile.
type Info struct {
	Name           string     `json:"name"`
	Path           string     `json:"path"`
	SizeBytes      int64      `json:"size_bytes"`
	InUse          bool       `json:"in_use"`
	InUseBy        string     `json:"in_use_by,omitempty"`
	LastSnapshot   string     `json:"last_snapshot,omitempty"`
	LastSnapshotAt *time.Time `json:"last_snapshot_at,omitempty"`
	// UnsavedSince is set when the profile holds a login that no snapshot
	// has (see MarkUnsaved): since `profile open` closed Chrome, or a run
	// whose login check passed failed to snapshot; a snapshot or restore of
	// the profile on this machine clears it.
	UnsavedSince *time.Time `json:"unsaved_since,omitempty"`
	// Warnings say what could not be told about the profile (its unsaved
	// mark, when the catalog cannot be read): a missing UnsavedSince then
	// does not mean there is no unsaved login.
	Warnings []string `json:"warnings,omitempty"`
}

// List describes every local profile, sorted by name. It works without a
// Catalog (nil: no catalog yet), leaving out the last snapshots; so does
// Verify.
func (m *Manager) List(ctx context.Context) ([]Info, error) {
	if err := m.checkRoot(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(m.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return []Info{}, nil
	}
	if err != nil {
		return nil, errcode.Wrap(err, errcode.Internal, "reading %s", m.Root)
	}
	out := []Info{}
	store := ""
	if m.Catalog != nil { // nil: no catalog yet (director profile list on a new home)
		if store, err = m.catalogStore(ctx); err != nil {
			return nil, err
		}
	}
	m.sweepOrphanedLeftovers(ctx, entries)
	for _, e := range entries {
		if ValidateName(e.Name()) != nil {
			continue
		}
		if !e.IsDir() {
			// A file or symlink under a profile's name: every command on
			// that name refuses it, saying so; the list says it too.
			if _, err := m.Exists(e.Name()); err != nil {
				m.log().Warn("not a profile: "+err.Error(), "hint", errcode.HintOf(err))
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		in := Info{Name: e.Name(), Path: m.Dir(e.Name())}
		in.SizeBytes = dirSize(in.Path)
		if li, inUse, err := launcher.ProfileInUse(in.Path); err == nil && inUse {
			in.InUse, in.InUseBy = true, li.Reason
		} else if l, err := m.Lock(ctx, in.Name, -1); err != nil {
			in.InUse, in.InUseBy = true, "another director command"
		} else {
			l.Unlock()
		}
		if m.Catalog != nil {
			if s, err := m.Catalog.LatestSnapshot(ctx, store, in.Name); err == nil {
				in.LastSnapshot = s.ID
				at := s.CreatedAt
				in.LastSnapshotAt = &at
			} else if errcode.Of(err) != errcode.SnapshotNotFound {
				return nil, err
			}
			// A listing only reads: it says what it cannot, and goes on.
			if since, err := m.unsavedSince(ctx, in.Name); err != nil {
				m.log().Warn("cannot tell whether the profile holds a login that no snapshot has", "profile", in.Name, "err", err)
				in.Warnings = append(in.Warnings, "cannot tell whether the profile holds a login that no snapshot has: "+err.Error())
			} else if !since.IsZero() {
				in.UnsavedSince = &since
			}
		}
		out = append(out, in)
	}
	return out, nil
}

// leftoverName matches what a killed restore or delete leaves in the root
// (see sweep) and gives the profile's name.
var leftoverName = regexp.MustCompile(`^\.(.+)\.(?:restore-[0-9]+|old-[0-9a-f]{12}|deleted-[a-z2-7]{6})$`)

// sweepOrphanedLeftovers removes what a killed restore or delete left of a
// profile that does not exist (a first restore of a new profile, killed),
// which no command on the profile would otherwise ever lock and sweep.
// A profile whose lock is held is skipped: its restore may be under way.
func (m *Manager) sweepOrphanedLeftovers(ctx context.Context, entries []fs.DirEntry) {
	seen := map[string]bool{}
	for _, e := range entries {
		sub := leftoverName.FindStringSubmatch(e.Name())
		if !e.IsDir() || sub == nil || seen[sub[1]] || ValidateName(sub[1]) != nil {
			continue
		}
		seen[sub[1]] = true
		if _, err := os.Lstat(m.Dir(sub[1])); !errors.Is(err, fs.ErrNotExist) {
			continue // the profile exists: List locks, and so sweeps, it
		}
		if l, err := m.Lock(ctx, sub[1], -1); err == nil {
			l.Unlock()
		}
	}
}

func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total
}

// DeleteResult reports what Delete removed.
type DeleteResult struct {
	Profile    string `json:"profile"`
	RemovedDir bool   `json:"removed_dir"` // false: the directory did not exist
	// With snapshots: the store they were deleted from, the snapshot ids
	// (catalog rows and objects), and every object removed under NAME/.
	Store            string   `json:"store,omitempty"`
	DeletedSnapshots []string `json:"deleted_snapshots,omitempty"`
	DeletedObjects   []string `json:"deleted_objects,omitempty"`
	// LeftInStore lists the archives without their manifest (or the
	// reverse) that are younger than StrayGrace by the store's clock: most
	// likely another machine's snapshot between storing the two, which
	// deleting would leave half there, reported as stored. `director
	// profile prune` or a later delete removes them once they are older.
	LeftInStore []string `json:"left_in_store,omitempty"`
}

// DeleteOptions are Delete's choices.
type DeleteOptions struct {
	// WithSnapshots deletes the profile's snapshots too.
	WithSnapshots bool
	// Force deletes a profile that holds a login no snapshot has
	// (UnsavedSince), which Delete otherwise refuses.
	Force bool
}

// Delete removes a local profile and, with WithSnapshots, its snapshots:
// the current store's catalog rows of the profile and every object under
// "NAME/" in the store (archives, encrypted archives, manifests), also those
// the catalog does not know (a lost or rebuilt catalog). It refuses a
// profile another command or Chrome uses, and then, unless Force, a profile
// that holds a login no snapshot has: in that order, so that the hint to
// snapshot it first is given only when a snapshot can run. A profile with
// neither a directory nor (with WithSnapshots) anything in the store is
// profile_not_found.
func (m *Manager) Delete(ctx context.Context, name string, o DeleteOptions) (_ *DeleteResult, err error) {
	defer func() { err = namedHint(err, name) }()
	withSnapshots := o.WithSnapshots
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	_, unlock, err := m.lockFor(ctx, name, nil)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res := &DeleteResult{Profile: name}
	dir := m.Dir(name)
	exists, err := m.Exists(name)
	if err != nil {
		return nil, err
	}
	if !exists && !withSnapshots {
		return nil, m.requireDir(name)
	}
	if exists {
		if err := m.refuseIfRunning(name); err != nil {
			return nil, err
		}
		since, err := m.unsavedSince(ctx, name)
		if err != nil && !o.Force {
			return nil, unsavedUnknown(name, "deleting", err)
		}
		if !o.Force && !since.IsZero() {
			return nil, errcode.New(errcode.InvalidInput, "profile %s holds a login that no snapshot has (from %s); not deleting it",
				name, since.UTC().Format(time.RFC3339)).
				WithHint("keep it first with `director profile snapshot %s`, or pass --force to delete it anyway", name)
		}
	}
	// Find the snapshots before removing anything, so that an unreachable
	// store fails the command with the profile still in place.
	var plan *snapshotPlan
	if withSnapshots {
		if plan, err = m.planSnapshotDeletion(ctx, name); err != nil {
			return nil, err
		}
		if !exists && plan.empty() {
			// A delete killed after its last object leaves the store's
			// folder (and maybe partial uploads): take them anyway.
			if sw, ok := m.Store.(storage.Sweeper); ok {
				if err := sw.Sweep(ctx, name+"/"); err != nil {
					m.log().Debug("cannot sweep the store folder of a profile without snapshots", "profile", name, "err", err)
				}
			}
			return nil, m.nowhere(name)
		}
	}
	if exists {
		// Rename first so a crash midway never leaves a half-deleted profile
		// under the real name.
		trash := filepath.Join(m.Root, fmt.Sprintf(".%s.deleted-%s", name, randomSuffix(deletedSuffixLen)))
		if err := os.Rename(dir, trash); err != nil {
			return nil, errcode.Hinted(err, errcode.Internal, "check the permissions of "+m.Root+", then retry", "deleting profile %q", name)
		}
		if err := snapshot.RemoveTree(trash); err != nil {
			return nil, errcode.Hinted(err, errcode.Internal, "remove "+trash+" by hand", "removing %s", trash)
		}
		res.RemovedDir = true
	}
	if plan != nil {
		res.Store = plan.store
		if err := m.deleteSnapshots(ctx, plan, res); err != nil {
			return res, err
		}
	}
	if err := m.Catalog.DeleteProfile(ctx, name); err != nil {
		if !res.RemovedDir {
			return res, err
		}
		// The profile is gone; its row only keeps its last-used time and
		// unsaved mark, which a profile create of the name resets. Failing
		// here would send a retry to profile_not_found.
		m.log().Warn("the profile is deleted, but its catalog row could not be removed; a later profile create of the name resets it",
			"profile", name, "err", err)
	}
	return res, nil
}

// nowhere is the profile_not_found of a profile with neither a directory
// nor snapshots in the store, which Delete --with-snapshots and Prune fail
// with.
func (m *Manager) nowhere(name string) error {
	return errcode.New(errcode.ProfileNotFound, "profile %q does not exist and has no snapshots in %s", name, m.Store).
		WithHint("check the name with `director profile list`; if its snapshots are in another store, give that store with --store")
}

// Absent returns the profile_not_found that Delete (with withSnapshots as
// inStore) and Prune (inStore) fail with when name has no directory and,
// with inStore, nothing under "NAME/" in the store either; a store that
// cannot be listed fails as Prune does. It needs no catalog and writes
// nothing: the CLI asks it first on a home that has no catalog yet, so that
// a command bound to fail creates neither the home nor director.db.
func (m *Manager) Absent(ctx context.Context, name string, inStore bool) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	err := m.requireDir(name)
	if err == nil || errcode.Of(err) != errcode.ProfileNotFound || !inStore {
		return err
	}
	objs, err := m.Store.List(ctx, name+"/")
	if err != nil {
		return errcode.Hinted(err, errcode.Of(err), storeHint(err, "nothing was deleted"), "listing %s in %s", name+"/", m.Store)
	}
	if len(objs) > 0 {
		return nil
	}
	return m.nowhere(name)
}

// snapshotPlan is what Delete removes with --with-snapshots.
type snapshotPlan struct {
	store string
	rows  []catalog.Snapshot // the store's catalog rows of the profile
	keys  []string           // every object under "NAME/", manifests first, but left
	ids   []string           // snapshot ids of rows and objects, newest first
	left  []string           // young strays: perhaps snapshots under way (DeleteResult.LeftInStore)
}

func (p *snapshotPlan) empty() bool { return len(p.rows) == 0 && len(p.keys) == 0 && len(p.left) == 0 }

func (m *Manager) planSnapshotDeletion(ctx context.Context, name string) (*snapshotPlan, error) {
	store, err := m.catalogStore(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := m.Catalog.ListSnapshots(ctx, store, name)
	if err != nil {
		return nil, err
	}
	objs, err := m.Store.List(ctx, name+"/")
	if err != nil {
		return nil, fmt.Errorf("listing the snapshots of %q in %s: %w", name, m.Store, err)
	}
	if len(objs) == 0 && len(rows) > 0 && m.storeEmpty(ctx) {
		// A store on a disk that is not mounted: "deleted" would leave
		// the archives, with their cookies, for when it is mounted again.
		return nil, emptyStoreErr(store, fmt.Sprintf("%d snapshot(s) of %q", len(rows), name), "nothing was deleted, the profile neither")
	}
	p := &snapshotPlan{store: store, rows: rows}
	// An archive without its manifest that is younger than StrayGrace is
	// most likely another machine's snapshot between storing the two:
	// deleting the archive would leave it a manifest without an archive,
	// which that machine reports as a snapshot stored.
	old, err := m.oldStrays(ctx, name, objs, rows)
	if err != nil {
		return nil, fmt.Errorf("asking %s for its time, to age the objects of %q that belong to no snapshot: %w", m.Store, name, err)
	}
	young := map[string]bool{}
	for _, k := range strays(name, objs, rows, time.Now().Add(100*365*24*time.Hour)) {
		if !slices.Contains(old, k) {
			young[k] = true
			p.left = append(p.left, k)
		}
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.ID] {
			seen[r.ID] = true
			p.ids = append(p.ids, r.ID)
		}
	}
	var manifests, others []string
	for _, o := range objs {
		if !strings.HasPrefix(o.Key, name+"/") {
			continue // a store whose List over-matches
		}
		if young[o.Key] {
			continue
		}
		if _, _, _, ok := parseManifestKey(o.Key); ok {
			manifests = append(manifests, o.Key)
		} else {
			others = append(others, o.Key)
		}
		if id, ok := snapshotIDOfKey(name, o.Key); ok && !seen[id] {
			seen[id] = true
			p.ids = append(p.ids, id)
		}
	}
	// Manifests first: a rebuild that runs meanwhile never finds a
	// manifest whose archive is already gone, and ignores archives alone.
	p.keys = append(manifests, others...)
	sort.Sort(sort.Reverse(sort.StringSlice(p.ids)))
	return p, nil
}

// snapshotIDOfKey returns the snapshot id of an archive or manifest key of
// profile ("NAME/<id>.tar.zst[.age]", "NAME/<id>.manifest.json[.age]").
func snapshotIDOfKey(profile, key string) (string, bool) {
	base, ok := strings.CutPrefix(key, profile+"/")
	if !ok || strings.Contains(base, "/") {
		return "", false
	}
	base = strings.TrimSuffix(base, ".age")
	for _, ext := range []string{".tar.zst", ".manifest.json"} {
		if id, ok := strings.CutSuffix(base, ext); ok && strings.HasPrefix(id, profile+"-") {
			return id, true
		}
	}
	return "", false
}

// deleteSnapshots removes the catalog rows first, then the objects, so the
// catalog never points at a missing object. Running it again after a
// failure finishes the job.
func (m *Manager) deleteSnapshots(ctx context.Context, p *snapshotPlan, res *DeleteResult) error {
	for _, r := range p.rows {
		if err := m.Catalog.DeleteSnapshot(ctx, r.Store, r.ID); err != nil && errcode.Of(err) != errcode.SnapshotNotFound {
			return err
		}
	}
	res.DeletedSnapshots = p.ids
	res.LeftInStore = p.left
	for _, key := range p.keys {
		if err := m.Store.Delete(ctx, key); err != nil {
			return errcode.Hinted(err, errcode.Of(err), storeHint(err, finishDelete(res.Profile)),
				"deleting %s from %s", key, m.Store)
		}
		res.DeletedObjects = append(res.DeletedObjects, key)
	}
	// A snapshot killed midway leaves a partial upload that no List shows.
	if sw, ok := m.Store.(storage.Sweeper); ok {
		if err := sw.Sweep(ctx, res.Profile+"/"); err != nil {
			return errcode.Hinted(err, errcode.Of(err), storeHint(err, finishDelete(res.Profile)),
				"removing partial uploads of %s from %s", res.Profile, m.Store)
		}
	}
	return nil
}

// finishDelete is what to do after fixing the store when profile delete
// --with-snapshots stopped partway.
func finishDelete(profile string) string {
	return fmt.Sprintf("then run `director profile delete %s --with-snapshots` again to finish", profile)
}

// deleteSnapshot removes the catalog row first, then the objects, so the
// catalog never points at a missing object.
func (m *Manager) deleteSnapshot(ctx context.Context, s catalog.Snapshot) error {
	if err := m.Catalog.DeleteSnapshot(ctx, s.Store, s.ID); err != nil {
		return err
	}
	for _, key := range []string{s.ManifestKey, s.ObjectKey} {
		if key == "" {
			continue
		}
		if err := m.Store.Delete(ctx, key); err != nil {
			return errcode.Wrap(err, errcode.Of(err), "deleting %s from %s (its catalog row is already gone; `director catalog rebuild` would bring it back)", key, m.Store)
		}
	}
	return nil
}

// catalogStore returns the store's name in the catalog (its URL without
// credentials, catalog.StoreName). Snapshot rows written before the catalog
// recorded stores are adopted by the store that holds their archives: each
// such row's archive is looked up here (once: adopted rows are no longer
// legacy), so that a first command against another store takes none of
// them. A store that cannot be asked now leaves the rows for a later call.
func (m *Manager) catalogStore(ctx context.Context) (string, error) {
	store := catalog.StoreName(storage.ID(m.Store))
	if m.Catalog == nil {
		return store, nil // no catalog yet: nothing to adopt
	}
	if err := m.adoptAliases(ctx, store); err != nil {
		return "", err
	}
	legacy, err := m.Catalog.LegacySnapshots(ctx)
	if err != nil || len(legacy) == 0 {
		return store, err
	}
	var ids []string
	for _, s := range legacy {
		_, serr := m.Store.Stat(ctx, s.ObjectKey)
		switch {
		case serr == nil:
			ids = append(ids, s.ID)
		case errors.Is(serr, storage.ErrNotFound):
		default:
			m.log().Warn("cannot tell which store holds catalog rows from before stores were recorded; asking again next time", "store", store, "err", serr)
			return store, nil
		}
	}
	n, err := m.Catalog.AdoptSnapshots(ctx, store, ids)
	if err != nil {
		return "", err
	}
	if n > 0 {
		m.log().Info("catalog rows from before stores were recorded now belong to this store", "store", store, "rows", n)
	}
	return store, nil
}

// adoptAliases moves to store the catalog rows recorded under another
// spelling of the same file store's folder: its path through a symlink (a
// home reached through one), as older directors named it, whichever
// spelling the command is run with. Without it one folder was two stores,
// and a prune through one spelling left the other's rows pointing at
// deleted archives. The store decides (SameStore) without reading any
// folder on a network mount, and a write happens only when there are rows
// to move.
func (m *Manager) adoptAliases(ctx context.Context, store string) error {
	a, ok := m.Store.(interface{ SameStore(id string) bool })
	if !ok {
		return nil
	}
	others, err := m.Catalog.FileStores(ctx)
	if err != nil {
		return err
	}
	for _, other := range others {
		if other == store || !a.SameStore(other) {
			continue
		}
		n, err := m.Catalog.MoveStore(ctx, other, store)
		if err != nil {
			return err
		}
		m.log().Info("catalog rows recorded under another spelling of the store's folder now belong to it", "store", store, "spelling", other, "rows", n)
	}
	return nil
}

// Snapshots lists the catalog's snapshots of a profile ("" for all) in the
// Manager's store, newest first.
// namedHint puts the profile's name into err's hint where a package that
// does not know it (snapshot, encrypt, catalog) wrote the placeholder
// <profile>, so that the hint's command works when pasted.
func namedHint(err error, name string) error {
	h := errcode.HintOf(err)
	if err == nil || ValidateName(name) != nil || !strings.Contains(h, "<profile>") {
		return err
	}
	return &errcode.Error{Code: errcode.Of(err), Hint: strings.ReplaceAll(h, "<profile>", name), Err: err}
}

func (m *Manager) Snapshots(ctx context.Context, name string) ([]catalog.Snapshot, error) {
	if name != "" {
		if err := ValidateName(name); err != nil {
			return nil, err
		}
	}
	store, err := m.catalogStore(ctx)
	if err != nil {
		return nil, err
	}
	return m.Catalog.ListSnapshots(ctx, store, name)
}

// PruneResult reports what Prune kept and deleted.
type PruneResult struct {
	Profile string   `json:"profile"`
	Kept    []string `json:"kept"`
	Deleted []string `json:"deleted"`
	// Missing lists catalog rows whose archive was no longer in the store:
	// they restore nothing, so Prune removed them (and their manifests)
	// without counting them among the kept.
	Missing []string `json:"missing"`
	// Strays lists the objects Prune removed that belong to no snapshot: an
	// archive without its manifest (a snapshot killed between storing the
	// two, or a prune or delete killed between deleting them) or a manifest
	// without its archive, named by no catalog row and more than
	// StrayGrace old.
	Strays []string `json:"strays"`
}

// StrayGrace is how old an archive without its manifest (or the reverse)
// must be before Prune removes it: a younger one may be a snapshot of
// another machine between storing its archive and its manifest.
const StrayGrace = time.Hour

// oldStrays returns the strays (see strays) in objs that are StrayGrace
// old by the store's clock. The times in a listing are the store's (a file
// server's, an object store's), and this machine's clock may be hours off
// it: aged by the local clock, another machine's archive stored a moment
// ago, whose manifest is on its way, could pass for an old stray. So when
// there is any stray at all, the store is asked for its time: it stores a
// one-byte probe under storage.CheckPrefix and reads the time it got. It
// does so too when probes of killed commands are left there, to age and
// remove them (see removeOldProbes), strays or not.
func (m *Manager) oldStrays(ctx context.Context, name string, objs []storage.Object, rows []catalog.Snapshot) ([]string, error) {
	if len(strays(name, objs, rows, time.Now().Add(100*365*24*time.Hour))) == 0 && !m.probesLeft(ctx) {
		return nil, nil
	}
	key := storage.CheckPrefix + "clock-" + randomSuffix(8)
	if err := m.Store.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
		return nil, err
	}
	defer func() {
		if err := m.Store.Delete(context.WithoutCancel(ctx), key); err != nil {
			m.log().Debug("could not remove the clock probe", "key", key, "err", err)
		}
	}()
	o, err := m.Store.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	if o.Modified.IsZero() {
		return nil, nil // a store that gives no times: nothing can be aged
	}
	m.removeOldProbes(ctx, key, o.Modified.Add(-StrayGrace))
	return strays(name, objs, rows, o.Modified.Add(-StrayGrace)), nil
}

// probesLeft says whether the store holds any probe under
// storage.CheckPrefix: normally none, since every command deletes its own;
// one is left by a prune or `store check` that was killed. A listing that
// fails says none: the prune has listed the store already, and the probes
// wait for the next one.
func (m *Manager) probesLeft(ctx context.Context) bool {
	probes, err := m.Store.List(ctx, storage.CheckPrefix)
	if err != nil {
		m.log().Debug("could not list the store's probes", "err", err)
		return false
	}
	return len(probes) > 0
}

// removeOldProbes deletes the probes under storage.CheckPrefix other than
// ours that are older than cutoff by the store's clock: those of a prune or
// a `store check` that was killed before its deferred delete. They would
// stay for good, and a store holding only them no longer lists as empty
// when its real folder is gone. Best effort: they are one byte each.
func (m *Manager) removeOldProbes(ctx context.Context, ours string, cutoff time.Time) {
	probes, err := m.Store.List(ctx, storage.CheckPrefix)
	if err != nil {
		m.log().Debug("could not list the store's probes", "err", err)
		return
	}
	for _, p := range probes {
		if p.Key == ours || p.Modified.IsZero() || !p.Modified.Before(cutoff) {
			continue
		}
		if err := m.Store.Delete(ctx, p.Key); err != nil {
			m.log().Debug("could not remove an old probe", "key", p.Key, "err", err)
		}
	}
}

// strays returns the keys under profile/ in objs that belong to no
// snapshot: an archive whose manifest is not in objs, or a manifest whose
// archive is not, that no row names, last modified before cutoff. An object
// whose store gives no time is never a stray.
func strays(profile string, objs []storage.Object, rows []catalog.Snapshot, cutoff time.Time) []string {
	present := make(map[string]bool, len(objs))
	for _, o := range objs {
		present[o.Key] = true
	}
	named := make(map[string]bool, 2*len(rows))
	for _, r := range rows {
		named[r.ObjectKey], named[r.ManifestKey] = true, true
	}
	var out []string
	for _, o := range objs {
		if named[o.Key] || o.Modified.IsZero() || !o.Modified.Before(cutoff) {
			continue
		}
		id, ok := snapshotIDOfKey(profile, o.Key)
		if !ok {
			continue // not director's: left alone
		}
		archive, manifest := objectKeys(profile, id, strings.HasSuffix(o.Key, ".age"))
		switch o.Key {
		case archive:
			if !present[manifest] {
				out = append(out, o.Key)
			}
		case manifest:
			if !present[archive] {
				out = append(out, o.Key)
			}
		}
	}
	return out
}

// Prune deletes a profile's snapshots in the Manager's store beyond the
// newest keepLast, except those younger than keepWithin (when non-zero). It
// never deletes the newest snapshot whose archive is in the store, and never
// looks at other stores. It first adds to the catalog the snapshots other
// machines stored (see adoptFromStore), so that the newest keepLast are the
// store's, whichever machine made them. It lists the store first, so that a row whose
// archive is gone never counts as a kept snapshot, and an unreachable store
// fails the prune before anything is deleted. It then removes the strays
// (see PruneResult.Strays) that kills left. Last, when the store is a
// storage.Sweeper, it removes what snapshots of the profile killed midway
// left there (temporary files, multipart uploads older than an hour).
func (m *Manager) Prune(ctx context.Context, name string, keepLast int, keepWithin time.Duration) (_ *PruneResult, err error) {
	defer func() { err = namedHint(err, name) }()
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if keepLast < 1 {
		keepLast = 1
	}
	_, unlock, err := m.lockFor(ctx, name, nil)
	if err != nil {
		return nil, err
	}
	defer unlock()
	store, err := m.catalogStore(ctx)
	if err != nil {
		return nil, err
	}
	// The store is shared: snapshots other machines made count too, or a
	// machine whose catalog never saw them would call the profile unknown,
	// or keep its own older snapshots as "the last N". A manifest this
	// machine cannot decrypt, or that a newer director wrote, is passed
	// over: its snapshot is not deleted.
	locked, lockedErr, err := m.adoptFromStore(ctx, store, name)
	if err != nil {
		return nil, errcode.Hinted(err, errcode.Of(err), storeHint(err, "nothing was deleted"), "listing %s in %s", name+"/", m.Store)
	}
	snaps, err := m.Catalog.ListSnapshots(ctx, store, name)
	if err != nil {
		return nil, err
	}
	if len(snaps) == 0 && locked != "" {
		var nf *snapshot.NewerFormatError
		if errors.As(lockedErr, &nf) {
			return nil, errcode.New(errcode.SnapshotCorrupt,
				"the snapshots of %q in %s were written by a newer director (the newest is %s, archive format %d; this director reads formats 1 to %d); nothing was deleted",
				name, m.Store, locked, nf.Version, snapshot.FormatVersion).
				WithHint("upgrade director on this machine, or prune from a machine with the newer director")
		}
		return nil, errcode.Hinted(lockedErr, errcode.DecryptFailed,
			"set "+encrypt.EnvIdentity+" (or "+encrypt.FlagIdentity+") to the identity file whose public key the snapshots are encrypted to: prune reads their manifests",
			"the snapshots of %q in %s are encrypted to a key this machine does not have (the newest is %s); nothing was deleted", name, m.Store, locked)
	}
	objs, err := m.Store.List(ctx, name+"/")
	if err != nil {
		return nil, errcode.Hinted(err, errcode.Of(err), storeHint(err, "nothing was deleted"), "listing %s in %s", name+"/", m.Store)
	}
	if len(snaps) == 0 && len(objs) == 0 {
		// Nothing here and nothing stored: a mistyped name. What a killed
		// snapshot, prune or delete left in the store (an archive without
		// its manifest) is an object, and the stray pass below takes it,
		// whether or not the profile is still on this machine.
		if err := m.requireDir(name); errcode.Of(err) == errcode.ProfileNotFound {
			return nil, m.nowhere(name)
		} else if err != nil {
			return nil, err
		}
	}
	if len(objs) == 0 && len(snaps) > 0 {
		// Every row's archive seems gone. A store that holds nothing at
		// all is more likely down (a disk that is not mounted) than
		// emptied: its rows stay (see Rebuild).
		all, err := m.Store.List(ctx, "")
		if err != nil {
			return nil, errcode.Hinted(err, errcode.Of(err), storeHint(err, "nothing was deleted"), "listing %s", m.Store)
		}
		if len(all) == 0 {
			return nil, emptyStoreErr(store, fmt.Sprintf("%d snapshot(s) of %q", len(snaps), name), "nothing was deleted")
		}
	}
	present := make(map[string]bool, len(objs))
	for _, o := range objs {
		present[o.Key] = true
	}
	res := &PruneResult{Profile: name, Kept: []string{}, Deleted: []string{}, Missing: []string{}, Strays: []string{}}
	now := m.now()
	kept := 0
	for _, s := range snaps {
		list := &res.Deleted
		switch {
		case !present[s.ObjectKey] && m.archiveGone(ctx, s):
			list = &res.Missing
		case kept < keepLast || (keepWithin > 0 && now.Sub(s.CreatedAt) < keepWithin):
			kept++
			res.Kept = append(res.Kept, s.ID)
			continue
		}
		if err := m.deleteSnapshot(ctx, s); err != nil {
			return res, err
		}
		*list = append(*list, s.ID)
	}
	// The command that finishes it, with the flags prune requires.
	again := fmt.Sprintf("then run `director profile prune %s --keep-last %d", name, keepLast)
	if keepWithin > 0 {
		again += " --keep-within " + keepWithin.String()
	}
	again += "` again to finish"
	old, err := m.oldStrays(ctx, name, objs, snaps)
	if err != nil {
		return res, errcode.Hinted(err, errcode.Of(err), storeHint(err, again),
			"asking %s for its time, to age the objects that belong to no snapshot", m.Store)
	}
	for _, key := range old {
		if err := m.Store.Delete(ctx, key); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return res, errcode.Hinted(err, errcode.Of(err), storeHint(err, again),
				"deleting %s, which belongs to no snapshot, from %s", key, m.Store)
		}
		res.Strays = append(res.Strays, key)
	}
	// Snapshots killed midway leave partial uploads that no List shows
	// and no row names; a prune (often a cron job) is where they go.
	if sw, ok := m.Store.(storage.Sweeper); ok {
		if err := sw.Sweep(ctx, name+"/"); err != nil {
			return res, errcode.Hinted(err, errcode.Of(err), storeHint(err, again),
				"removing partial uploads of %s from %s", name, m.Store)
		}
	}
	return res, nil
}

// storeHint is the hint for a failed store call err, followed by then: the
// store's own hint says what is wrong (refused credentials, a missing
// bucket, a server that is down), which a generic "retry when the store is
// reachable" would hide.
// storeDown says whether err is a store that did not answer: a call that
// ran out of time, or a server that cannot be reached. The calls that would
// follow would fail the same way, each after its own wait.
func storeDown(err error) bool {
	p := storage.ProblemOf(err)
	return err != nil && (p == storage.ProblemTimeout || p == storage.ProblemUnreachable)
}

func storeHint(err error, then string) string {
	h := errcode.HintOf(err)
	if h == "" {
		h = "retry when the store is reachable"
	}
	return h + "; " + then
}

// emptyStoreErr is the refusal to take the catalog's rows of what (such
// as "2 snapshot(s) of \"work\"") for gone from store, which holds no
// object at all: a file:// store on a disk that is not mounted lists as
// empty. unchanged says what was left alone.
func emptyStoreErr(store, what, unchanged string) error {
	return errcode.New(errcode.StorageUnavailable, "the store %s holds nothing, but the catalog lists %s in it; %s", store, what, unchanged).
		WithHint("%s", emptyStoreHint)
}

// emptyStoreHint is what to do about a store that lists as empty while
// the catalog has rows in it.
const emptyStoreHint = "if the store is on a disk or share that is not mounted, mount it; check --store and its credentials; " +
	"if its snapshots really are all gone, run `director catalog rebuild --allow-empty-store` to drop their rows"

// storeEmpty reports whether the store lists no object at all (false when
// it cannot be listed).
func (m *Manager) storeEmpty(ctx context.Context) bool {
	all, err := m.Store.List(ctx, "")
	return err == nil && len(all) == 0
}

// archiveGone double-checks a listing's word that a snapshot's archive is
// missing before Prune drops its row: only a Stat that says "not found"
// counts; any other answer keeps the row.
func (m *Manager) archiveGone(ctx context.Context, s catalog.Snapshot) bool {
	_, err := m.Store.Stat(ctx, s.ObjectKey)
	return errcode.Of(err) == errcode.SnapshotNotFound
}

// newID returns "<profile>-<UTC timestamp>-<short random>".
func (m *Manager) newID(name string) string {
	return name + "-" + m.now().Format("20060102T150405Z") + "-" + randomSuffix(4)
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

func randomSuffix(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}

// objectKeys returns the archive and manifest keys of a snapshot id.
func objectKeys(profile, id string, encrypted bool) (archive, manifest string) {
	archive = profile + "/" + id + ".tar.zst"
	manifest = profile + "/" + id + ".manifest.json"
	if encrypted {
		archive += ".age"
		manifest += ".age"
	}
	return archive, manifest
}

// parseManifestKey recognises "<profile>/<id>.manifest.json[.age]".
func parseManifestKey(key string) (profile, id string, encrypted, ok bool) {
	profile, base, found := strings.Cut(key, "/")
	if !found || strings.Contains(base, "/") || ValidateName(profile) != nil {
		return "", "", false, false
	}
	if strings.HasSuffix(base, ".age") {
		encrypted = true
		base = strings.TrimSuffix(base, ".age")
	}
	id, found = strings.CutSuffix(base, ".manifest.json")
	if !found || !strings.HasPrefix(id, profile+"-") {
		return "", "", false, false
	}
	return profile, id, encrypted, true
}

// sortNewestFirst orders snapshots by creation time, then id.
func sortNewestFirst(s []catalog.Snapshot) {
	sort.Slice(s, func(i, j int) bool {
		if !s[i].CreatedAt.Equal(s[j].CreatedAt) {
			return s[i].CreatedAt.After(s[j].CreatedAt)
		}
		return s[i].ID > s[j].ID
	})
}
