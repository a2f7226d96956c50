package profiles

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"director/catalog"
	"director/encrypt"
	"director/errcode"
	"director/internal/bytesize"
	"director/snapshot"
	"director/storage"
)

// SnapshotOptions tune one snapshot.
type SnapshotOptions struct {
	Note     string
	Excludes []string // nil means snapshot.DefaultExcludes()
	Includes []string // globs re-included despite the excludes
	Lock     *Lock    // a lock the caller already holds on this profile
}

// SnapshotResult reports a stored snapshot.
type SnapshotResult struct {
	ID            string        `json:"id"`
	Profile       string        `json:"profile"`
	ObjectKey     string        `json:"object_key"`
	ManifestKey   string        `json:"manifest_key"`
	Store         string        `json:"store"`
	Location      string        `json:"location"` // the archive's URL: the store's with the key in its path
	ArchiveSize   int64         `json:"archive_size"`
	ArchiveSHA256 string        `json:"archive_sha256"`
	RawSize       int64         `json:"raw_size"`
	FileCount     int           `json:"file_count"`
	Encrypted     bool          `json:"encrypted"`
	ChromeVersion string        `json:"chrome_version,omitempty"`
	Note          string        `json:"note,omitempty"`
	Duration      time.Duration `json:"duration_ns"`
	Warnings      []string      `json:"warnings,omitempty"`
}

func (m *Manager) encrypting() bool { return len(m.Recipients) > 0 }

// storeLeaves says whether the store's objects leave this machine: a
// remote store's do, and so do a file store's on a network mount, unless
// the profiles themselves live on that same mount (a home directory on
// NFS), where plaintext archives beside them expose nothing more.
func (m *Manager) storeLeaves() bool {
	if !storage.IsRemote(m.Store) {
		return false
	}
	nm, ok := m.Store.(interface{ NetworkMount() string })
	if !ok || nm.NetworkMount() == "" {
		return true // S3, Supabase
	}
	return leavesMachine(nm.NetworkMount(), storage.NetworkMountOf(m.Root))
}

// leavesMachine says whether a file store on the network mount storeMount
// leaves the machine, for profiles on rootMount ("" for a local disk).
func leavesMachine(storeMount, rootMount string) bool { return storeMount != rootMount }

// SnapshotAllowed says whether Snapshot may store an archive at all: a
// remote store takes only encrypted archives unless InsecureNoEncryption.
// A caller with work to do before its snapshot (a workflow run) asks first.
func (m *Manager) SnapshotAllowed() error {
	if m.storeLeaves() && !m.encrypting() && !m.InsecureNoEncryption {
		where := m.Store.String()
		if nf, ok := m.Store.(interface{ NetworkFS() string }); ok && nf.NetworkFS() != "" {
			where += " (a " + nf.NetworkFS() + " mount, whose files leave this machine)"
		}
		return errcode.New(errcode.InvalidInput, "refusing to upload an unencrypted profile to %s: archives hold live cookies", where).
			WithHint("set DIRECTOR_AGE_RECIPIENTS to your identity's public key, which `director key recipient` prints (`director key generate` makes an identity if you have none), or pass --insecure-no-encryption")
	}
	return nil
}

// RoundTripAllowed fails when a snapshot would be encrypted only to keys
// this machine's identity is not one of: a run that restores the latest
// snapshot and then snapshots would leave a latest one it can never
// restore again, so its next run fails with decrypt_failed. A caller that
// restores and snapshots (a workflow run) asks first.
func (m *Manager) RoundTripAllowed() error {
	if !m.encrypting() || encrypt.Decryptable(m.Identities, m.Recipients) {
		return nil
	}
	return errcode.New(errcode.InvalidInput, "this machine's age identity is not among the recipients, so it could not restore the snapshot it takes (its next restore: latest would fail with decrypt_failed)").
		WithHint("add this machine's public key, which `director key recipient` prints, to %s (keys are separated by commas)", encrypt.EnvRecipients)
}

// refuseEmptyStore fails a snapshot of name into a store that holds
// nothing at all while the catalog lists name's snapshots there: a file://
// store on a disk that is not mounted, where the archive would go to the
// folder under the mount point and vanish when the disk is mounted (a cron
// refresh would then "succeed" every night). A store that cannot be listed
// is left to the upload: credentials may allow writing only.
func (m *Manager) refuseEmptyStore(ctx context.Context, store, name string) error {
	if m.Catalog == nil {
		return nil
	}
	rows, err := m.Catalog.ListSnapshots(ctx, store, name)
	if err != nil || len(rows) == 0 {
		return err
	}
	if objs, err := m.Store.List(ctx, name+"/"); err != nil || len(objs) > 0 || !m.storeEmpty(ctx) {
		if storeDown(err) {
			// A store that does not answer will not take the upload
			// either: one wait, not one for every call that follows.
			return errcode.Hinted(err, errcode.Of(err), storeHint(err, "nothing was stored"), "snapshot of %q", name)
		}
		if err != nil {
			m.log().Debug("cannot list the store before a snapshot", "profile", name, "err", err)
		}
		return nil
	}
	return emptyStoreErr(store, fmt.Sprintf("%d snapshot(s) of %q", len(rows), name), "nothing was stored")
}

// Snapshot archives a profile into the store and records it in the catalog.
// The catalog row is inserted only after the archive and its manifest are
// stored; a failure removes what was stored.
func (m *Manager) Snapshot(ctx context.Context, name string, o SnapshotOptions) (_ *SnapshotResult, err error) {
	defer func() { err = namedHint(err, name) }()
	start := time.Now()
	if snapshot.HasControl(o.Note) {
		return nil, errcode.New(errcode.InvalidInput, "the note %q holds a control character (a newline, a tab, ESC…)", o.Note).
			WithHint("give the note as one line of plain text")
	}
	unlock, err := m.exclusive(ctx, name, o.Lock, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := m.SnapshotAllowed(); err != nil {
		return nil, err
	}
	store, err := m.catalogStore(ctx)
	if err != nil {
		return nil, err
	}
	if err := m.refuseEmptyStore(ctx, store, name); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	id := m.newID(name)
	created := m.now()
	archiveKey, manifestKey := objectKeys(name, id, m.encrypting())
	excludes := o.Excludes
	if excludes == nil {
		excludes = snapshot.DefaultExcludes()
	}

	// Producer: tar -> zstd -> (age) into a pipe; consumer: the store.
	// The progress counts the files' bytes against their total, which the
	// walk knows before any is archived: the archive's size is known only
	// at its end.
	var prog *snapshotProgress
	if m.NewProgress != nil {
		prog = &snapshotProgress{m: m, label: "snapshot " + name}
	}
	pr, pw := io.Pipe()
	made := make(chan *snapshot.Manifest, 1)
	prodErr := make(chan error, 1)
	go func() {
		man, err := m.produce(ctx, pw, m.Dir(name), snapshot.CreateOptions{
			ID: id, Profile: name, Note: o.Note, Host: host, CreatedAt: created,
			Excludes: excludes, Includes: o.Includes, MaxUnpackedBytes: m.maxUnpacked(), Progress: prog.create(),
		})
		pw.CloseWithError(err)
		made <- man
		prodErr <- err
	}()
	hr := newHashingReader(storage.MaxSize(pr, m.maxSize()))
	putErr := m.Store.Put(ctx, archiveKey, hr, -1)
	if putErr != nil {
		pr.CloseWithError(putErr)
	}
	man, pErr := <-made, <-prodErr
	prog.finish() // the producer, which drew it, is done
	if pErr != nil || putErr != nil {
		if !storeDown(putErr) {
			// A store that does not answer has no object to remove (an
			// upload that was stored after all is a stray, which prune
			// removes), and a delete would only wait once more.
			m.removeObjects(archiveKey)
		}
		if errors.Is(putErr, storage.ErrTooLarge) {
			return nil, m.tooLarge(name) // putErr says no more than this
		}
		// Whichever side failed first is the cause: a store that fails
		// closes the pipe under the archiver, and an archiver that fails
		// (a file changed, the context ended) fails the upload's body.
		if pErr != nil && (putErr == nil || errors.Is(putErr, pErr)) {
			return nil, overUnpacked(fmt.Errorf("snapshot of %q: %w", name, pErr), true)
		}
		return nil, fmt.Errorf("snapshot of %q: storing %s: %w", name, archiveKey, putErr)
	}
	man.ArchiveKey = archiveKey
	man.ArchiveSize = hr.n
	man.ArchiveSHA256 = hr.sum()
	man.Encrypted = m.encrypting()
	if err := m.putManifest(ctx, manifestKey, man); err != nil {
		m.removeObjects(archiveKey, manifestKey)
		return nil, err
	}
	// The row right after the manifest. Everything that adds rows from the
	// store's manifests does so under the profile's lock, which this holds,
	// so the id is this snapshot's alone; upserting still never fails a
	// stored snapshot over its own row.
	row := rowFromManifest(man, manifestKey, store)
	if err := m.Catalog.UpsertSnapshot(ctx, row); err != nil {
		m.removeObjects(archiveKey, manifestKey)
		return nil, err
	}
	var warnings []string
	if n, err := KeyringBoundCookies(ctx, m.Dir(name)); err != nil {
		m.log().Debug("could not inspect the cookie database", "profile", name, "err", err)
	} else if n > 0 {
		warnings = append(warnings, fmt.Sprintf("%d cookies are encrypted with this machine's keyring (v11): they will not decrypt after a restore on another machine; "+
			"log in again through `director profile open %s --snapshot`, which runs Chrome with --password-store=basic", n, name))
		m.log().Warn("keyring-bound cookies in snapshot", "profile", name, "count", n)
	}
	_ = m.Catalog.TouchProfile(ctx, name, created)
	m.clearUnsaved(ctx, name) // the snapshot holds it now
	m.log().Info("snapshot stored", "profile", name, "id", id, "bytes", hr.n, "files", man.FileCount)
	return &SnapshotResult{
		ID: id, Profile: name, ObjectKey: archiveKey, ManifestKey: manifestKey, Store: storage.ID(m.Store), Location: storage.Location(m.Store, archiveKey),
		ArchiveSize: hr.n, ArchiveSHA256: man.ArchiveSHA256, RawSize: man.RawSize, FileCount: man.FileCount,
		Encrypted: man.Encrypted, ChromeVersion: man.ChromeVersion, Note: man.Note, Duration: time.Since(start), Warnings: warnings,
	}, nil
}

// snapshotProgress is a snapshot's progress display, made by the Manager's
// NewProgress once snapshot.Create knows the files' total (Start) and told
// their bytes as they are archived (Add), on the producing goroutine; a nil
// *snapshotProgress shows nothing.
type snapshotProgress struct {
	m     *Manager
	label string
	p     Progress
}

// create is p as snapshot.CreateOptions.Progress: nil for a nil p, so that
// Create does no work for it.
func (p *snapshotProgress) create() snapshot.Progress {
	if p == nil {
		return nil
	}
	return p
}

func (p *snapshotProgress) Start(total int64) { p.p = p.m.progress(p.label, total) }

func (p *snapshotProgress) Add(n int64) {
	if p.p != nil {
		p.p.Add(n)
	}
}

// finish ends the display, once the producer is done with it.
func (p *snapshotProgress) finish() {
	if p != nil && p.p != nil {
		p.p.Finish()
	}
}

// tooLarge explains a snapshot whose archive grew past MaxSize: how big
// the profile is, and a --max-size that holds its archive even if nothing
// in it compresses (its size on disk, plus 1% and 2 MiB for the tar
// headers, zstd's and age's framing, rounded down to a MiB, which still
// leaves more than 1 MiB of that room), written as bytesize.Format writes
// it (rounded up). It wraps storage.ErrTooLarge.
func (m *Manager) tooLarge(name string) error {
	onDisk := dirSize(m.Dir(name))
	enough := (onDisk + onDisk/100 + 2<<20) &^ (1<<20 - 1)
	return errcode.Hinted(storage.ErrTooLarge, errcode.InvalidInput,
		fmt.Sprintf("the profile holds %s on disk; set --max-size (or DIRECTOR_MAX_SIZE) to %s or more, here and on every machine that restores it, or leave big files out with --exclude GLOB",
			snapshot.SizeText(onDisk), bytesize.Format(enough)),
		"snapshot of %q: the archive is larger than --max-size, %s", name, bytesize.Exact(m.maxSize()))
}

// overUnpacked gives err, when it refuses an archive over the unpacked-size
// limit (snapshot.UnpackedLimitError), a hint naming --max-unpacked and a
// size that takes the archive; other errors are returned as they are.
// snapshotting says err refused a profile to snapshot, rather than an
// archive to restore or verify.
func overUnpacked(err error, snapshotting bool) error {
	var e *snapshot.UnpackedLimitError
	if !errors.As(err, &e) {
		return err
	}
	need := bytesize.Format(e.Need)
	trust := "if you trust this snapshot, set"
	if _, perr := bytesize.Parse(need); perr != nil {
		// Near 8 EiB, where Format rounds up past what Parse takes: only
		// a hostile manifest claims that much; bytes still parse.
		need = strconv.FormatInt(e.Need, 10)
		trust = "no real profile holds that much: do not restore it; only"
	}
	hint := fmt.Sprintf("%s --max-unpacked (or DIRECTOR_MAX_UNPACKED) to %s or more", trust, need)
	if snapshotting {
		hint = fmt.Sprintf("set --max-unpacked (or DIRECTOR_MAX_UNPACKED) to %s or more, here and on every machine that restores it, "+
			"or leave the biggest files out with --exclude GLOB (`du -ah` in the profile directory, sorted with `sort -h`, lists them)", need)
	}
	return &errcode.Error{Code: errcode.Of(err), Hint: hint, Err: err}
}

// MarkUnsaved records that the local profile name now holds a login that no
// snapshot has: `director profile open` calls it once Chrome runs and again
// when the person is done, before any snapshot, and a run whose login check
// passed calls it before its snapshot. A later snapshot or restore of the
// profile clears the mark; until then a run's restore that passes
// RestoreOptions.KeepUnsaved does not replace the profile with an older
// snapshot.
func (m *Manager) MarkUnsaved(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	return m.Catalog.SetUnsaved(ctx, name, m.now())
}

// unsavedSince is when the local profile name came to hold a login that no
// snapshot has (see MarkUnsaved), zero when it holds none or there is no
// catalog; an error when the catalog cannot be read, which callers take as
// a refusal (unsavedUnknown), not as no mark. Delete refuses such a profile
// without Force.
func (m *Manager) unsavedSince(ctx context.Context, name string) (time.Time, error) {
	if m.Catalog == nil {
		return time.Time{}, nil
	}
	p, err := m.Catalog.GetProfile(ctx, name)
	if errcode.Of(err) == errcode.ProfileNotFound {
		return time.Time{}, nil // never marked
	}
	if err != nil {
		return time.Time{}, err
	}
	return p.UnsavedSince, nil
}

// unsavedUnknown refuses to doing (replace, delete) profile name when its
// unsaved mark cannot be read: the guard of a login no snapshot has fails
// closed. --force goes on without it.
func unsavedUnknown(name, doing string, err error) error {
	return errcode.Hinted(err, errcode.Of(err),
		fmt.Sprintf("the catalog could not be read (see the error); fix that first, or, if profile %s holds no login you need, pass --force", name),
		"cannot tell whether profile %s holds a login that no snapshot has, so not %s it", name, doing)
}

// clearUnsaved removes the profile's MarkUnsaved after a snapshot or a
// restore; a failure only means a later run may keep a local profile that
// a snapshot already holds.
func (m *Manager) clearUnsaved(ctx context.Context, name string) {
	if err := m.Catalog.SetUnsaved(context.WithoutCancel(ctx), name, time.Time{}); err != nil {
		m.log().Warn("cannot clear the profile's unsaved mark", "profile", name, "err", err)
	}
}

// exclusive prepares a use-case that rewrites or reads a whole profile: it
// validates the name, takes the profile's lock (or uses held), optionally
// requires the profile to exist, and refuses a profile Chrome runs on.
func (m *Manager) exclusive(ctx context.Context, name string, held *Lock, mustExist bool) (unlock func(), err error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	_, unlock, err = m.lockFor(ctx, name, held)
	if err != nil {
		return nil, err
	}
	if mustExist {
		err = m.requireDir(name)
	}
	if err == nil {
		err = m.refuseIfRunning(name)
	}
	if err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// produce writes the archive, encrypted when recipients are set.
func (m *Manager) produce(ctx context.Context, w io.Writer, dir string, o snapshot.CreateOptions) (*snapshot.Manifest, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	var out io.Writer = bw
	var enc io.WriteCloser
	if m.encrypting() {
		var err error
		if enc, err = encrypt.Encrypt(bw, m.Recipients); err != nil {
			return nil, err
		}
		out = enc
	}
	man, err := snapshot.Create(ctx, dir, out, o)
	if err != nil {
		return nil, err
	}
	if enc != nil {
		if err := enc.Close(); err != nil {
			return nil, errcode.Wrap(err, errcode.Internal, "finishing encryption")
		}
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	return man, nil
}

// removeObjects deletes objects of a failed snapshot, best effort, with a
// fresh context so that a cancelled command still cleans up. What it cannot
// remove is logged at Debug only: the snapshot's own error is the one line
// the user sees, and such an object is never taken for a snapshot (no
// catalog row points at it; an archive without its manifest is ignored by
// rebuild, and delete --with-snapshots removes it).
func (m *Manager) removeObjects(keys ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, k := range keys {
		if err := m.Store.Delete(ctx, k); err != nil {
			m.log().Debug("could not remove the object of a failed snapshot", "key", k, "err", err)
		}
	}
}

// warnUnlisted reports that resolve could not list the store and used the
// catalog's latest row: a warning when the use-case succeeded anyway, only
// a Debug line when it failed, since its error is then the one line the
// user sees (and says what the store did).
func (m *Manager) warnUnlisted(unlisted, err error) {
	if unlisted == nil {
		return
	}
	const msg = "could not look in the store for snapshots this catalog lacks; used the catalog's latest"
	if err != nil {
		m.log().Debug(msg, "err", unlisted)
		return
	}
	m.log().Warn(msg, "err", unlisted)
}

func (m *Manager) putManifest(ctx context.Context, key string, man *snapshot.Manifest) error {
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return errcode.Wrap(err, errcode.Internal, "encoding manifest")
	}
	if m.encrypting() {
		var buf bytes.Buffer
		w, err := encrypt.Encrypt(&buf, m.Recipients)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return errcode.Wrap(err, errcode.Internal, "encrypting manifest")
		}
		if err := w.Close(); err != nil {
			return errcode.Wrap(err, errcode.Internal, "encrypting manifest")
		}
		b = buf.Bytes()
	}
	if err := m.Store.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("storing manifest %s: %w", key, err)
	}
	return nil
}

// decrypt is encrypt.Decrypt with the Manager's identities. Without any,
// because the identity file was passed over, it says why.
func (m *Manager) decrypt(r io.Reader) (io.Reader, error) {
	out, err := encrypt.Decrypt(r, m.Identities)
	if err != nil && m.UnusedIdentity != nil && errors.Is(err, encrypt.ErrNoIdentity) {
		hint := errcode.HintOf(m.UnusedIdentity)
		if hint == "" {
			hint = errcode.HintOf(err)
		}
		return nil, errcode.Hinted(identityPassedOver{m.UnusedIdentity.Error()}, errcode.DecryptFailed, hint, "")
	}
	return out, err
}

// identityPassedOver is encrypt.ErrNoIdentity, saying why there was none.
type identityPassedOver struct{ why string }

func (e identityPassedOver) Error() string {
	return "the snapshot is encrypted, and the identity file was not used: " + strings.ReplaceAll(e.why, "\n", "; ")
}

func (e identityPassedOver) Unwrap() error { return encrypt.ErrNoIdentity }

// getManifest reads and parses a stored manifest.
func (m *Manager) getManifest(ctx context.Context, key string) (*snapshot.Manifest, error) {
	rc, _, err := m.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var r io.Reader = io.LimitReader(rc, 64<<20)
	if strings.HasSuffix(key, ".age") {
		if r, err = m.decrypt(r); err != nil {
			return nil, err
		}
	}
	b, err := io.ReadAll(r)
	if err != nil {
		if c := errcode.Of(err); c != errcode.Internal {
			return nil, err
		}
		return nil, errcode.Wrap(err, errcode.StorageUnavailable, "reading manifest %s", key)
	}
	man, err := snapshot.ParseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", key, err)
	}
	return man, nil
}

func rowFromManifest(man *snapshot.Manifest, manifestKey, store string) catalog.Snapshot {
	return catalog.Snapshot{
		ID: man.ID, Store: store, Profile: man.Profile, ObjectKey: man.ArchiveKey, ManifestKey: manifestKey,
		CreatedAt: man.CreatedAt, ArchiveSize: man.ArchiveSize, ArchiveSHA256: man.ArchiveSHA256,
		RawSize: man.RawSize, FileCount: int64(man.FileCount), ChromeVersion: man.ChromeVersion,
		Host: man.Host, OS: man.OS, Note: man.Note, Encrypted: man.Encrypted,
	}
}

// RestoreOptions tune one restore.
type RestoreOptions struct {
	Archive string // restore from this local archive file instead of the store
	// Force restores even a snapshot written by a newer Chrome, and one
	// older than a login the local profile holds that no snapshot has
	// (Manager.MarkUnsaved), which Restore otherwise refuses: that login
	// would be lost.
	Force   bool
	MaxSize int64 // archive size bound; 0 means the Manager's
	Lock    *Lock // a lock the caller already holds on this profile
	// KeepUnsaved leaves the local profile as it is when it holds a login
	// that no snapshot has (Manager.MarkUnsaved: `director profile open`
	// without a snapshot after it, or a run whose snapshot failed) and that
	// is newer than the snapshot ref resolves to: restoring would replace
	// the fresher login with an older one. The result then says KeptLocal.
	// Runs pass it for restore: latest.
	KeepUnsaved bool
}

// RestoreResult reports a restore.
type RestoreResult struct {
	Profile   string        `json:"profile"`
	ID        string        `json:"id"`
	Source    string        `json:"source"` // the --archive file, or the archive's URL in the store
	Path      string        `json:"path"`
	FileCount int           `json:"file_count"`
	RawSize   int64         `json:"raw_size"`
	Created   bool          `json:"created"`
	Duration  time.Duration `json:"duration_ns"`
	// KeptLocal says that RestoreOptions.KeepUnsaved left the local profile
	// in place: it holds a login no snapshot has from UnsavedSince, newer than
	// snapshot Skipped (the one a restore would have brought). ID is then
	// empty and nothing was restored.
	KeptLocal    bool      `json:"kept_local,omitempty"`
	UnsavedSince time.Time `json:"unsaved_since,omitzero"`
	Skipped      string    `json:"skipped_snapshot_id,omitempty"`
}

// openArchive opens the local archive of RestoreOptions.Archive.
func openArchive(path string) (*os.File, error) {
	// Stat first: opening a fifo would block, and a directory opens fine
	// and fails only at the first read.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, errcode.New(errcode.InvalidInput, "--archive %s is not a regular file (%s)", path, st.Mode().Type()).
			WithHint("give the path of a .tar.zst or .tar.zst.age file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errcode.Hinted(err, errcode.SnapshotNotFound, "check the path given to --archive", "opening archive %s", path)
	}
	return f, nil
}

// CheckRestore fails as Restore would when the snapshot it is asked for
// is not there: an invalid name, an --archive it cannot open, or an id or
// latest the catalog and the store (only the store's manifests, for a
// Manager without a catalog) do not hold, or hold encrypted to a key this
// machine lacks. Without a catalog (m.Catalog nil) it writes nothing: the
// CLI asks it first on a home that has no catalog yet, so that a restore
// bound to fail creates neither the home nor director.db.
func (m *Manager) CheckRestore(ctx context.Context, name, ref string, o RestoreOptions) (err error) {
	defer func() { err = namedHint(err, name) }()
	if _, err := m.Exists(name); err != nil {
		return err // a bad name, or not a directory where the profile would be
	}
	if o.Archive != "" {
		f, err := openArchive(o.Archive)
		if err != nil {
			return err
		}
		defer f.Close()
		// An encrypted archive's header says at once whether this
		// machine's identity opens it.
		head := make([]byte, 32)
		n, _ := io.ReadFull(f, head)
		if !encrypt.IsEncrypted(head[:n]) {
			return nil
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return errcode.Wrap(err, errcode.Internal, "reading %s", o.Archive)
		}
		_, err = m.decrypt(f)
		return err
	}
	row, _, err := m.resolve(ctx, name, ref, false, forRestore)
	if err != nil {
		return err
	}
	return m.plaintextRefused(row)
}

// plaintextRefused refuses to restore a plaintext snapshot from a remote
// store unless InsecureNoEncryption: director uploads only encrypted
// archives there, so a plaintext one was put there by hand or by someone
// with write access to the store, who could swap in a login of their own.
func (m *Manager) plaintextRefused(row catalog.Snapshot) error {
	if row.Encrypted || m.InsecureNoEncryption || !m.storeLeaves() {
		return nil
	}
	return errcode.New(errcode.UnsafeArchive, "snapshot %s of profile %q in %s is not encrypted, and director uploads only encrypted archives to a remote store: anyone who can write to the store could have put it there", row.ID, row.Profile, m.Store).
		WithHint("if you stored it yourself with --insecure-no-encryption, restore it with --insecure-no-encryption too; otherwise delete %s (and its manifest) from the store, and restore an encrypted snapshot by id (`director profile snapshots %s`)", row.ObjectKey, row.Profile)
}

// Restore replaces (or creates) a profile from a snapshot: ref is an id or
// "latest" (also ""), or opts.Archive names a local archive file. The old
// profile is untouched on every failure.
func (m *Manager) Restore(ctx context.Context, name, ref string, o RestoreOptions) (_ *RestoreResult, err error) {
	defer func() { err = namedHint(err, name) }()
	start := time.Now()
	var unlisted error
	defer func() { m.warnUnlisted(unlisted, err) }()
	unlock, err := m.exclusive(ctx, name, o.Lock, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	_, statErr := os.Stat(m.Dir(name))
	res := &RestoreResult{Profile: name, Path: m.Dir(name), Created: statErr != nil}
	maxSize := o.MaxSize
	if maxSize <= 0 {
		maxSize = m.maxSize()
	}

	var (
		src       io.ReadCloser
		size      int64 = -1
		expectSHA string
		encrypted bool
		row       catalog.Snapshot // the snapshot of the store, when not --archive
	)
	if o.Archive != "" {
		f, err := openArchive(o.Archive)
		if err != nil {
			return nil, err
		}
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		src, res.Source = f, o.Archive
		head := make([]byte, 32)
		n, _ := io.ReadFull(f, head)
		encrypted = encrypt.IsEncrypted(head[:n])
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			f.Close()
			return nil, errcode.Wrap(err, errcode.Internal, "reading %s", o.Archive)
		}
	} else {
		var err error
		row, unlisted, err = m.resolve(ctx, name, ref, true, forRestore) // under the profile's lock
		if err != nil {
			return nil, err
		}
		if statErr == nil && (o.KeepUnsaved || !o.Force) {
			since, err := m.unsavedSince(ctx, name)
			switch {
			case err != nil && o.KeepUnsaved:
				// A run keeps a login no snapshot has even with --force
				// (which it passes for a newer Chrome's snapshot): it
				// cannot tell here, so it does not replace the profile.
				return nil, errcode.Hinted(err, errcode.Of(err),
					fmt.Sprintf("the catalog could not be read (see the error); fix that first, or, if profile %s holds no login you need, replace it by hand with `director profile restore %s latest --force`", name, name),
					"cannot tell whether profile %s holds a login that no snapshot has, so the run does not replace it", name)
			case err != nil && !o.Force:
				return nil, unsavedUnknown(name, "replacing", err)
			case err != nil:
				m.log().Warn("cannot tell whether the profile holds a login that no snapshot has; --force replaces it", "profile", name, "err", err)
				since = time.Time{}
			}
			if !since.IsZero() && since.After(row.CreatedAt) {
				if !o.KeepUnsaved {
					return nil, unsavedLogin(name, since, row.ID)
				}
				m.log().Warn("the local profile has a login newer than the latest snapshot; keeping it, not restoring",
					"profile", name, "unsaved_since", since, "snapshot", row.ID)
				res.KeptLocal, res.UnsavedSince, res.Skipped = true, since, row.ID
				res.Duration = time.Since(start)
				return res, nil
			}
		}
		if err := m.plaintextRefused(row); err != nil {
			return nil, err
		}
		if storeDown(unlisted) {
			// The listing got no answer: the download would wait again.
			// (A run that keeps its newer local login, above, needs no
			// store and goes on.)
			err := unlisted
			unlisted = nil // said here, not warned again
			return nil, errcode.Hinted(err, errcode.Of(err), storeHint(err, fmt.Sprintf("profile %q is untouched", name)),
				"listing the snapshots of %q in %s", name, m.Store)
		}
		if row.ArchiveSize > maxSize {
			return nil, errcode.New(errcode.UnsafeArchive, "snapshot %s is %d bytes (%s), over the --max-size limit of %s",
				row.ID, row.ArchiveSize, snapshot.SizeText(row.ArchiveSize), bytesize.Exact(maxSize)).
				WithHint("if you trust this snapshot, set --max-size (or DIRECTOR_MAX_SIZE) to %s or more", bytesize.Format(row.ArchiveSize))
		}
		rc, obj, err := m.Store.Get(ctx, row.ObjectKey)
		if err != nil {
			return nil, m.fetchErr(ctx, row, err, fmt.Sprintf("profile %q is untouched", name))
		}
		src, size, expectSHA, encrypted = rc, obj.Size, row.ArchiveSHA256, row.Encrypted
		res.ID, res.Source = row.ID, storage.Location(m.Store, row.ObjectKey)
	}
	defer src.Close()
	if size > maxSize {
		return nil, errcode.New(errcode.UnsafeArchive, "archive is %d bytes (%s), over the --max-size limit of %s", size, snapshot.SizeText(size), bytesize.Exact(maxSize)).
			WithHint("if you trust this archive, set --max-size (or DIRECTOR_MAX_SIZE) to %s or more", bytesize.Format(size))
	}

	hr := newHashingReader(src)
	var body io.Reader = hr
	var status func(string)
	if p := m.progress("restore "+name, size); p != nil {
		body = p.Reader(body)
		defer p.Finish()
		if s, ok := p.(interface{ Status(string) }); ok {
			status = s.Status
		}
	}
	// A snapshot of the store whose archive fails to decrypt or extract is
	// first checked against the catalog's sha256, so that a damaged archive
	// is named as such (damagedArchive); hashChecked says BeforeSwap did.
	hashChecked := false
	// archiveOf is the profile an --archive file's manifest names, once
	// read: a damaged file's hint sends to that profile's snapshots.
	archiveOf := ""
	failed := func(err error) error {
		var over *snapshot.UnpackedLimitError
		if errors.As(err, &over) {
			return overUnpacked(err, false) // refused by a setting, not damage
		}
		if o.Archive != "" {
			return damagedFile(name, o.Archive, archiveOf, err)
		}
		if expectSHA == "" || hashChecked {
			return err
		}
		return damagedArchive(name, row, hr, err)
	}
	if encrypted {
		if body, err = m.decrypt(body); err != nil {
			return nil, failed(err)
		}
	}
	man, err := snapshot.Restore(ctx, body, m.Dir(name), snapshot.RestoreOptions{
		ExtractOptions: snapshot.ExtractOptions{
			MaxArchiveBytes: maxSize, MaxUnpackedBytes: m.maxUnpacked(),
			ManifestRead: func(man *snapshot.Manifest) { archiveOf = man.Profile },
		},
		Status: status,
		BeforeSwap: func(man *snapshot.Manifest) error {
			// Drain what follows the tar stream: through the decrypter first,
			// so that age authenticates the final chunk, then the raw bytes,
			// so that the hash covers the whole object.
			if _, err := io.Copy(io.Discard, body); err != nil {
				if errcode.Of(err) != errcode.Internal {
					return err
				}
				return errcode.Wrap(err, errcode.SnapshotCorrupt, "reading the end of the archive")
			}
			if _, err := io.Copy(io.Discard, hr); err != nil {
				return errcode.Wrap(err, errcode.StorageUnavailable, "reading the rest of the archive")
			}
			hashChecked = true
			if expectSHA != "" && (hr.sum() != expectSHA || hr.n != row.ArchiveSize) {
				return archiveMismatch(name, row, hr, nil)
			}
			if o.Archive != "" && statErr == nil && !o.Force {
				// An archive file says when it was made only here.
				since, err := m.unsavedSince(ctx, name)
				if err != nil {
					return unsavedUnknown(name, "replacing", err)
				}
				if !since.IsZero() && since.After(man.CreatedAt) {
					return unsavedLogin(name, since, man.ID)
				}
			}
			return m.checkChromeVersion(ctx, man, o.Force)
		},
	})
	if err != nil {
		return nil, failed(err)
	}
	if res.ID == "" {
		res.ID = man.ID
	}
	res.FileCount, res.RawSize = man.FileCount, man.RawSize
	_ = m.Catalog.TouchProfile(ctx, name, m.now())
	m.clearUnsaved(ctx, name) // what was unsaved is replaced
	res.Duration = time.Since(start)
	return res, nil
}

// fetchErr is the error of reading the archive of the catalog's row. A
// missing archive means this machine's catalog is out of date: the
// snapshot was pruned or deleted after the catalog recorded it, most often
// by another machine sharing the store. The store's own hint would send the
// user to `director profile snapshots`, which still lists it. Unless the
// store holds nothing at all: then it is more likely down (a disk that is
// not mounted), and a rebuild would refuse to drop every row (see
// Rebuild); unchanged says what was left alone.
func (m *Manager) fetchErr(ctx context.Context, row catalog.Snapshot, err error, unchanged string) error {
	if errcode.Of(err) != errcode.SnapshotNotFound {
		return fmt.Errorf("fetching snapshot %s: %w", row.ID, err)
	}
	if m.storeEmpty(ctx) {
		// storage_unavailable, as catalog rebuild says: a run must not
		// take it for a profile without snapshots and go on without one.
		return errcode.Hinted(err, errcode.StorageUnavailable, emptyStoreHint,
			"snapshot %s of profile %q is in this machine's catalog, but the store %s holds nothing at all (is it down?); %s", row.ID, row.Profile, m.Store, unchanged)
	}
	return errcode.Hinted(err, errcode.SnapshotNotFound,
		fmt.Sprintf("this machine's catalog is out of date: run `director catalog rebuild` (it drops the snapshots that left the store), then `director profile restore %s latest` or an id from `director profile snapshots %s`", row.Profile, row.Profile),
		"snapshot %s of profile %q is in this machine's catalog but no longer in %s (pruned or deleted, perhaps by another machine sharing the store)", row.ID, row.Profile, m.Store)
}

// unsavedLogin refuses to restore snapshot id over profile name, which
// holds a login since since that no snapshot has.
func unsavedLogin(name string, since time.Time, id string) error {
	return errcode.New(errcode.InvalidInput, "profile %s holds a login that no snapshot has (from %s), newer than snapshot %s",
		name, since.UTC().Format(time.RFC3339), id).
		WithHint("keep it with `director profile snapshot %s`, or pass --force to replace it with %s", name, id)
}

// checkChromeVersion refuses a snapshot written by a newer Chrome than the
// one that will open it (Chrome fact 7), unless forced.
func (m *Manager) checkChromeVersion(ctx context.Context, man *snapshot.Manifest, force bool) error {
	if force || m.ChromeVersion == nil || man.ChromeVersion == "" {
		return nil
	}
	local, err := m.ChromeVersion(ctx)
	if err != nil {
		return err // a Chrome named by the user that cannot answer
	}
	if local == "" {
		m.log().Warn("could not read the local Chrome version; skipping the downgrade check")
		return nil
	}
	if compareVersions(man.ChromeVersion, local) > 0 {
		return errcode.New(errcode.InvalidInput, "snapshot %s was written by Chrome %s, newer than the local Chrome %s", man.ID, man.ChromeVersion, local).
			WithHint("upgrade Chrome here, or pass --force (Chrome may reset parts of a profile it sees as downgraded)")
	}
	return nil
}

// compareVersions compares dotted numeric versions.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			fmt.Sscanf(as[i], "%d", &x)
		}
		if i < len(bs) {
			fmt.Sscanf(bs[i], "%d", &y)
		}
		if x != y {
			if x > y {
				return 1
			}
			return -1
		}
	}
	return 0
}

// resolve finds the catalog row for ref ("latest", "" or an id) among the
// rows of the Manager's store. For latest it also lists the store's
// manifests, so that a snapshot another machine made (absent from this
// catalog) is found without downloading archives. When that listing fails
// but the catalog has a latest row, it returns the row and the listing's
// error as unlisted, for the caller to report with warnUnlisted once it
// knows whether it succeeded.
//
// With adopt, the snapshots it finds in the store that the catalog lacks
// become catalog rows; the caller must then hold the profile's lock, so
// that no prune deletes one between its listing and its row (a row that
// would point at nothing) and no snapshot of the profile is between
// storing its manifest and inserting its row. Without adopt it only reads.
func (m *Manager) resolve(ctx context.Context, name, ref string, adopt bool, p purpose) (row catalog.Snapshot, unlisted, err error) {
	row, err = m.resolveRow(ctx, name, ref, adopt, p, &unlisted)
	if err != nil {
		unlisted = nil // the error says it
	}
	return row, unlisted, err
}

// purpose is what resolve finds a snapshot for, as its errors say it: a
// restore, or a verify, which restores nothing.
type purpose uint8

const (
	forRestore purpose = iota
	forVerify
)

// done is what did not happen when resolve failed: "nothing was …".
func (p purpose) done() string {
	if p == forVerify {
		return "verified"
	}
	return "restored"
}

// doing is what a machine that needs a newer director does.
func (p purpose) doing() string {
	if p == forVerify {
		return "verifies"
	}
	return "restores"
}

// older is what to do with the older snapshots this director can read.
func (p purpose) older() string {
	if p == forVerify {
		return "verify an older snapshot by its id"
	}
	return "an older snapshot still restores by its id"
}

func (m *Manager) resolveRow(ctx context.Context, name, ref string, adopt bool, p purpose, unlisted *error) (catalog.Snapshot, error) {
	store, err := m.catalogStore(ctx)
	if err != nil {
		return catalog.Snapshot{}, err
	}
	if ref != "" && ref != "latest" {
		var row catalog.Snapshot
		if m.Catalog != nil {
			row, err = m.Catalog.GetSnapshot(ctx, store, ref)
			if err == nil {
				if row.Profile != name {
					return row, errcode.New(errcode.InvalidInput, "snapshot %s belongs to profile %q, not %q", ref, row.Profile, name).
						WithHint("restore it with `director profile restore %s %s`, or use --archive", row.Profile, ref)
				}
				return row, nil
			}
			if errcode.Of(err) != errcode.SnapshotNotFound {
				return row, err
			}
		}
		// Not in this catalog: perhaps another machine made it.
		for _, enc := range []bool{true, false} {
			ak, mk := objectKeys(name, ref, enc)
			man, gerr := m.getManifest(ctx, mk)
			if errcode.Of(gerr) == errcode.SnapshotNotFound {
				continue
			}
			if gerr != nil {
				return row, gerr
			}
			if man.ID != ref || man.Profile != name || man.ArchiveKey != ak {
				return row, errcode.New(errcode.SnapshotCorrupt, "manifest %s in %s names snapshot %s of profile %q (archive %s), not %s", mk, m.Store, man.ID, man.Profile, man.ArchiveKey, ref).
					WithHint("the store holds a damaged or misplaced manifest; restore another snapshot or use --archive")
			}
			// The catalog gains a row only for a snapshot whose archive is
			// there: a row must never point at nothing (prune and latest
			// trust rows).
			if _, serr := m.Store.Stat(ctx, ak); serr != nil {
				if errcode.Of(serr) == errcode.SnapshotNotFound {
					return row, errcode.New(errcode.SnapshotNotFound, "snapshot %s of profile %q has a manifest in %s but no archive (%s is missing)", ref, name, m.Store, ak).
						WithHint("list restorable snapshots with `director profile snapshots %s`", name)
				}
				return row, serr
			}
			row := rowFromManifest(man, mk, store)
			if m.Catalog == nil || !adopt {
				return row, nil
			}
			if err := m.Catalog.UpsertSnapshot(ctx, row); err != nil {
				return row, err
			}
			return row, nil
		}
		if m.Catalog == nil {
			return row, errcode.New(errcode.SnapshotNotFound, "no snapshot %q of profile %q in %s (and %s)", ref, name, m.Store, m.noCatalog()).
				WithHint("check --home / DIRECTOR_HOME, --store / DIRECTOR_STORE and the id; %s", m.FirstSnapshotHint(name))
		}
		return row, errcode.New(errcode.SnapshotNotFound, "no snapshot %q of profile %q in the catalog or in %s", ref, name, m.Store).
			WithHint("list snapshots with `director profile snapshots %s`", name)
	}
	if m.Catalog == nil {
		return m.latestInStore(ctx, store, name, p)
	}
	var locked string
	var lockedErr, adoptErr error
	var unknown catalog.Snapshot // without adopt: the newest the catalog lacks
	if adopt {
		locked, lockedErr, adoptErr = m.adoptFromStore(ctx, store, name)
	} else {
		locked, lockedErr, adoptErr = m.storeSnapshots(ctx, store, name, func(row catalog.Snapshot) error {
			if newerRow(row, unknown) {
				unknown = row
			}
			return nil
		})
	}
	row, err := m.Catalog.LatestSnapshot(ctx, store, name)
	if unknown.ID != "" && (errcode.Of(err) == errcode.SnapshotNotFound || (err == nil && newerRow(unknown, row))) {
		row, err = unknown, nil
	}
	if locked != "" && (err != nil || idNewer(name, locked, row)) {
		// The newest snapshot is one this machine cannot read: restoring
		// the catalog's latest instead would quietly go back in time.
		return row, m.newestUnreadable(name, locked, lockedErr,
			"set "+encrypt.EnvIdentity+" (or "+encrypt.FlagIdentity+") to the identity file whose public key the snapshots are encrypted to; a newly generated key cannot decrypt them",
			"; nothing was "+p.done(), p)
	}
	if adoptErr != nil && err == nil {
		// Reported by the caller (warnUnlisted) when it goes on: when it
		// cannot, the error says it.
		*unlisted = adoptErr
	}
	if errcode.Of(err) == errcode.SnapshotNotFound && adoptErr != nil {
		// Not "no snapshot yet": the store could not say. A caller that took
		// it for "none" would start from an empty profile.
		return row, errcode.Hinted(adoptErr, errcode.Of(adoptErr), storeHint(adoptErr, "then retry"),
			"the catalog has no snapshot of %q and the store %s could not be listed", name, m.Store)
	}
	if errcode.Of(err) == errcode.SnapshotNotFound {
		return row, errcode.New(errcode.SnapshotNotFound, "profile %q has no snapshot in the catalog or in %s", name, m.Store).
			WithHint("%s", m.FirstSnapshotHint(name))
	}
	return row, err
}

// FirstSnapshotHint says how to make a profile's first snapshot: snapshot
// the profile when it is here, and when it is not (a restore on a new
// machine, a mistyped name), log in to it first: `director profile snapshot`
// of a profile that does not exist fails too.
func (m *Manager) FirstSnapshotHint(name string) string {
	if st, err := os.Stat(m.Dir(name)); err == nil && st.IsDir() {
		return fmt.Sprintf("a snapshot is made with `director profile snapshot %s`", name)
	}
	return fmt.Sprintf("profile %q is not on this machine either: log in to it and snapshot it with `director profile open %s --snapshot`", name, name)
}

// adoptFromStore lists "<name>/" in the store and adds to the catalog every
// snapshot whose manifest and archive are stored but which the catalog lacks
// (one made on another machine). It reads only those manifests, never an
// archive. A manifest that the Manager's identity (or lack of one) cannot
// decrypt, or that a newer director wrote, is passed over: locked is the
// newest such snapshot id, and lockedErr the error that says why, so that the caller can tell whether the
// snapshot it would pick is really the newest.
func (m *Manager) adoptFromStore(ctx context.Context, store, name string) (locked string, lockedErr, err error) {
	return m.storeSnapshots(ctx, store, name, func(row catalog.Snapshot) error {
		if err := m.Catalog.UpsertSnapshot(ctx, row); err != nil {
			return err
		}
		m.log().Info("found a snapshot in the store that the catalog lacked", "id", row.ID)
		return nil
	})
}

// latestInStore is the newest snapshot of name in the store, read from the
// manifests alone, for a Manager without a catalog (verify on a machine
// that has none yet). As with a catalog, a newer snapshot whose manifest
// this machine cannot decrypt fails with decrypt_failed rather than being
// passed over.
func (m *Manager) latestInStore(ctx context.Context, store, name string, p purpose) (catalog.Snapshot, error) {
	var latest catalog.Snapshot
	locked, lockedErr, err := m.storeSnapshots(ctx, store, name, func(row catalog.Snapshot) error {
		if newerRow(row, latest) {
			latest = row
		}
		return nil
	})
	if err != nil {
		return latest, errcode.Hinted(err, errcode.Of(err), storeHint(err, "then retry"),
			"%s and the store %s could not be listed", m.noCatalog(), m.Store)
	}
	if locked != "" && (latest.ID == "" || idNewer(name, locked, latest)) {
		return latest, m.newestUnreadable(name, locked, lockedErr,
			"set "+encrypt.EnvIdentity+" (or "+encrypt.FlagIdentity+") to the identity file whose public key the snapshots are encrypted to", "", p)
	}
	if latest.ID == "" {
		return latest, errcode.New(errcode.SnapshotNotFound, "profile %q has no snapshot in %s (and %s)", name, m.Store, m.noCatalog()).
			WithHint("check --home / DIRECTOR_HOME and --store / DIRECTOR_STORE; %s", m.FirstSnapshotHint(name))
	}
	return latest, nil
}

// unreadable says whether err, from reading a snapshot's manifest, means
// that the snapshot is sound but this machine cannot read it: it is
// encrypted to a key this machine does not have, or a newer director wrote
// it (snapshot.NewerFormatError). Such a snapshot is passed over, never
// deleted, and never passed over silently for "latest".
func unreadable(err error) bool {
	var nf *snapshot.NewerFormatError
	return errcode.Of(err) == errcode.DecryptFailed && encrypt.WrongKey(err) || errors.As(err, &nf)
}

// newestUnreadable is the error for "latest" when the newest snapshot of
// name, id, is one this machine cannot read (lockedErr, see unreadable):
// decrypt_failed with keyHint for a key it does not have; for a snapshot a
// newer director wrote, what to upgrade, and that an older snapshot still
// restores (or verifies, as p says) by its id. then ends the message.
func (m *Manager) newestUnreadable(name, id string, lockedErr error, keyHint, then string, p purpose) error {
	var nf *snapshot.NewerFormatError
	if errors.As(lockedErr, &nf) {
		// Without a catalog, profile snapshots lists nothing: the store's
		// older snapshots reach the catalog by a rebuild.
		list := fmt.Sprintf("see `director profile snapshots %s`", name)
		if m.Catalog == nil {
			list = fmt.Sprintf("`director catalog rebuild` lists the store's snapshots in the catalog, then see `director profile snapshots %s`", name)
		}
		return errcode.New(errcode.SnapshotCorrupt,
			"the newest snapshot of %q in %s, %s, was written by a newer director (archive format %d; this director reads formats 1 to %d)%s",
			name, m.Store, id, nf.Version, snapshot.FormatVersion, then).
			WithHint("upgrade director on this machine: every machine that %s from a shared store needs a director as new as the newest one that snapshots to it; "+
				"%s (%s)", p.doing(), p.older(), list)
	}
	return errcode.Hinted(lockedErr, errcode.DecryptFailed, keyHint,
		"the newest snapshot of %q in %s, %s, is encrypted to a key this machine does not have%s", name, m.Store, id, then)
}

// storeSnapshots lists "<name>/" in the store and calls add with the row of
// every snapshot whose manifest and archive are stored and which the
// catalog (when the Manager has one) lacks. It reads only those manifests,
// never an archive; see adoptFromStore for locked and lockedErr.
func (m *Manager) storeSnapshots(ctx context.Context, store, name string, add func(catalog.Snapshot) error) (locked string, lockedErr, err error) {
	objs, err := m.Store.List(ctx, name+"/")
	if err != nil {
		return "", nil, err
	}
	present := make(map[string]bool, len(objs))
	for _, o := range objs {
		present[o.Key] = true
	}
	for _, o := range objs {
		p, id, _, ok := parseManifestKey(o.Key)
		if !ok || p != name {
			continue
		}
		if m.Catalog != nil {
			if _, err := m.Catalog.GetSnapshot(ctx, store, id); errcode.Of(err) != errcode.SnapshotNotFound {
				continue // known, or the catalog failed (reported by the caller's query)
			}
		}
		man, err := m.getManifest(ctx, o.Key)
		if unreadable(err) {
			if idTime(name, id).After(idTime(name, locked)) || locked == "" {
				locked, lockedErr = id, err
			}
			continue
		}
		if c := errcode.Of(err); c == errcode.SnapshotCorrupt || c == errcode.DecryptFailed {
			// One damaged manifest must not hide the snapshots after it
			// (restore latest would go back in time, prune would fail). In
			// an encrypted store the damage shows as a ciphertext that does
			// not decrypt (a wrong key is handled above; a store that fails
			// while it is read is not decrypt_failed).
			m.log().Warn("passed over a damaged manifest in the store; `director catalog rebuild` lists it", "key", o.Key, "err", err)
			continue
		}
		if err != nil {
			return locked, lockedErr, err
		}
		if man.ID != id || !present[man.ArchiveKey] {
			continue // an upload still in progress, or a damaged manifest
		}
		if err := add(rowFromManifest(man, o.Key, store)); err != nil {
			return locked, lockedErr, err
		}
	}
	return locked, lockedErr, nil
}

// newerRow says whether a is newer than b in the catalog's order of
// latest (created_at, then id); any row is newer than the zero one.
func newerRow(a, b catalog.Snapshot) bool {
	return b.ID == "" || a.CreatedAt.After(b.CreatedAt) || (a.CreatedAt.Equal(b.CreatedAt) && a.ID > b.ID)
}

// idTime is the creation time, to the second, that a snapshot id of profile
// ("<profile>-<UTC timestamp>-<random>") carries; zero when it has none.
func idTime(profile, id string) time.Time {
	rest, ok := strings.CutPrefix(id, profile+"-")
	if !ok {
		return time.Time{}
	}
	stamp, _, _ := strings.Cut(rest, "-")
	t, err := time.Parse("20060102T150405Z", stamp)
	if err != nil {
		return time.Time{}
	}
	return t
}

// idNewer says whether snapshot id of profile is newer than row, by the
// time its id carries: at the same second (or with no time), it counts as
// newer, so that a snapshot that cannot be read is never passed over.
func idNewer(profile, id string, row catalog.Snapshot) bool {
	t := idTime(profile, id)
	return t.IsZero() || !t.Before(row.CreatedAt.Truncate(time.Second))
}

// resolveForVerify resolves the snapshot Verify reads. It adds the
// snapshots other machines stored to the catalog (see resolve) only when it
// can take the profile's lock at once: Verify writes no profile and must
// not wait for a snapshot or a `profile open` on it, and a snapshot of the
// profile that runs now finishes its own row. Without the lock (or a
// catalog) it only reads, and still finds them.
func (m *Manager) resolveForVerify(ctx context.Context, name, ref string) (catalog.Snapshot, error, error) {
	if m.Catalog == nil {
		return m.resolve(ctx, name, ref, false, forVerify)
	}
	l, err := m.Lock(ctx, name, -1)
	if err != nil {
		m.log().Debug("verify reads the store's snapshots without adding them to the catalog", "profile", name, "reason", err)
		return m.resolve(ctx, name, ref, false, forVerify)
	}
	defer l.Unlock()
	return m.resolve(ctx, name, ref, true, forVerify)
}

// VerifyResult reports a verification.
type VerifyResult struct {
	Profile       string `json:"profile"`
	ID            string `json:"id"`
	ArchiveSHA256 string `json:"archive_sha256"`
	ArchiveSize   int64  `json:"archive_size"`
	FileCount     int    `json:"file_count"`
	RawSize       int64  `json:"raw_size"`
	OK            bool   `json:"ok"`
}

// Verify reads a snapshot back from the store and checks the archive hash
// and every file against the manifest, writing nothing but the catalog rows
// of snapshots other machines stored. Without a Catalog (nil: none yet) it
// finds the snapshot from the store's manifests alone. The manifest stored
// beside the archive must exist and describe the same archive: without it
// catalog rebuild and other machines do not see the snapshot.
func (m *Manager) Verify(ctx context.Context, name, ref string) (_ *VerifyResult, err error) {
	defer func() { err = namedHint(err, name) }()
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	row, unlisted, err := m.resolveForVerify(ctx, name, ref)
	defer func() { m.warnUnlisted(unlisted, err) }()
	if err != nil {
		return nil, err
	}
	manifestKey := row.ManifestKey
	if manifestKey == "" {
		_, manifestKey = objectKeys(row.Profile, row.ID, row.Encrypted)
	}
	if _, err := m.Store.Stat(ctx, manifestKey); err != nil {
		if storage.ProblemOf(err) != storage.ProblemNotFound && errcode.Of(err) != errcode.SnapshotNotFound {
			return nil, fmt.Errorf("checking the manifest of snapshot %s: %w", row.ID, err)
		}
		// Without its archive too, the snapshot has left the store: it is
		// not a damaged snapshot whose archive "still restores".
		if _, aerr := m.Store.Stat(ctx, row.ObjectKey); aerr != nil {
			return nil, m.fetchErr(ctx, row, aerr, "nothing was verified")
		}
		return nil, errcode.New(errcode.SnapshotCorrupt, "snapshot %s: its manifest %s is missing from %s", row.ID, manifestKey, m.Store).
			WithHint("the archive still restores (it carries its own manifest), but `director catalog rebuild` and other machines cannot see this snapshot: "+
				"take a new snapshot with `director profile snapshot %s`, or re-upload %s from a copy", name, manifestKey)
	}
	// The stored manifest first: it holds every file's sha256 (an archive
	// from format 2 on holds only their digest), so that the archive is
	// checked against it and a damaged file is named. One that cannot be
	// read, or claims another archive, is reported after the archive has
	// been checked on its own.
	stored, storedErr := m.getManifest(ctx, manifestKey)
	if c := errcode.Of(storedErr); c == errcode.DecryptFailed || c == errcode.StorageUnavailable || c == errcode.Timeout {
		return nil, storedErr
	}
	var expect *snapshot.Manifest
	if storedErr == nil && stored.ID == row.ID && stored.ArchiveSHA256 == row.ArchiveSHA256 {
		expect = stored
	}
	rc, obj, err := m.Store.Get(ctx, row.ObjectKey)
	if err != nil {
		return nil, m.fetchErr(ctx, row, err, "nothing was verified")
	}
	defer rc.Close()
	hr := newHashingReader(rc)
	var body io.Reader = hr
	if p := m.progress("verify "+row.ID, obj.Size); p != nil {
		body = p.Reader(body)
		defer p.Finish()
	}
	if row.Encrypted {
		if body, err = m.decrypt(body); err != nil {
			return nil, damagedArchive(name, row, hr, err)
		}
	}
	man, err := snapshot.Verify(ctx, body, snapshot.ExtractOptions{MaxArchiveBytes: max(m.maxSize(), row.ArchiveSize), MaxUnpackedBytes: m.maxUnpacked(), Expect: expect})
	var over *snapshot.UnpackedLimitError
	if errors.As(err, &over) {
		return nil, overUnpacked(fmt.Errorf("snapshot %s: %w", row.ID, err), false) // refused by a setting, not damage
	}
	if err != nil {
		if derr := damagedArchive(name, row, hr, err); derr != err {
			return nil, derr // the archive is not the one recorded: that error names the snapshot
		}
		return nil, fmt.Errorf("snapshot %s: %w", row.ID, err)
	}
	if _, err := io.Copy(io.Discard, hr); err != nil {
		return nil, errcode.Wrap(err, errcode.StorageUnavailable, "reading the rest of the archive")
	}
	if hr.sum() != row.ArchiveSHA256 || hr.n != row.ArchiveSize {
		return nil, archiveMismatch(name, row, hr, nil)
	}
	if man.ID != row.ID || int64(man.FileCount) != row.FileCount || man.RawSize != row.RawSize {
		return nil, errcode.New(errcode.SnapshotCorrupt, "snapshot %s: archive manifest (id %s, %d files, %d bytes) differs from the catalog (%d files, %d bytes)", row.ID, man.ID, man.FileCount, man.RawSize, row.FileCount, row.RawSize).
			WithHint("run `director catalog rebuild` if the catalog is stale, else treat this snapshot as damaged")
	}
	if storedErr != nil {
		return nil, errcode.Hinted(storedErr, errcode.SnapshotCorrupt,
			fmt.Sprintf("the archive is intact and still restores; take a new snapshot with `director profile snapshot %s`, or re-upload %s from a copy", name, manifestKey),
			"snapshot %s: its stored manifest %s cannot be read", row.ID, manifestKey)
	}
	if stored.ID != row.ID || stored.ArchiveSHA256 != hr.sum() || stored.ArchiveSize != hr.n {
		return nil, errcode.New(errcode.SnapshotCorrupt, "snapshot %s: stored manifest %s (id %s, archive sha256 %s, %d bytes) does not describe the stored archive (sha256 %s, %d bytes)",
			row.ID, manifestKey, stored.ID, stored.ArchiveSHA256, stored.ArchiveSize, hr.sum(), hr.n).
			WithHint("the archive is intact and still restores; take a new snapshot with `director profile snapshot %s`, or re-upload the right %s", name, manifestKey)
	}
	return &VerifyResult{Profile: name, ID: row.ID, ArchiveSHA256: hr.sum(), ArchiveSize: hr.n, FileCount: man.FileCount, RawSize: man.RawSize, OK: true}, nil
}

// damagedArchive explains a failed verification. When the stored archive
// no longer has the sha256 the catalog recorded for it, the archive itself
// was altered or damaged, and that is reported rather than what reading it
// ran into: an archive that is not the snapshot's makes its manifest look
// foreign, and a damaged encrypted one makes the key look wrong. Errors of
// the store or the context are returned as they are.
func damagedArchive(name string, row catalog.Snapshot, hr *hashingReader, cause error) error {
	switch errcode.Of(cause) {
	case errcode.SnapshotCorrupt, errcode.UnsafeArchive, errcode.DecryptFailed:
	default:
		return cause
	}
	// One byte more than the catalog's size is enough to tell: a store that
	// sends without end is not read to its end.
	if rest := row.ArchiveSize + 1 - hr.n; rest > 0 {
		if _, err := io.CopyN(io.Discard, hr, rest); err != nil && !errors.Is(err, io.EOF) {
			return cause
		}
	}
	if hr.sum() == row.ArchiveSHA256 && hr.n == row.ArchiveSize {
		return cause
	}
	return archiveMismatch(name, row, hr, cause)
}

// damagedFile is the error of restoring profile name from the local
// archive file path, which failed with err: damage (a truncation, altered
// bytes, of a plaintext or an encrypted archive) is snapshot_corrupt with
// a hint naming the file. age's errors said decrypt_failed, "modified or
// truncated in the store", though the file is local and the same damage in
// a plaintext archive was snapshot_corrupt. A snapshot of a newer director
// is not damage, nor is a key problem. of is the profile the archive's
// manifest names, "" when it could not be read: the store's snapshots the
// hint sends to are that profile's, which need not be name (an archive of
// work restored as work3).
func damagedFile(name, path, of string, err error) error {
	var nf *snapshot.NewerFormatError
	if errors.As(err, &nf) || !errors.Is(err, encrypt.ErrDamaged) && errcode.Of(err) != errcode.SnapshotCorrupt {
		return err
	}
	var where string
	switch {
	case of == name:
		where = fmt.Sprintf("restore a snapshot from the store (`director profile snapshots %s`)", name)
	case of != "" && ValidateName(of) == nil:
		where = fmt.Sprintf("restore one of the store's snapshots of %s, the profile it was taken of (`director profile snapshots %s`); a snapshot from the store restores as its own profile, %s, and replaces that profile on this machine", of, of, of)
	default:
		where = "restore a snapshot from the store (`director profile snapshots` lists those of every profile; the file's own profile could not be read)"
	}
	return errcode.Hinted(err, errcode.SnapshotCorrupt,
		fmt.Sprintf("the file %s is damaged or incomplete (a truncated or altered copy): copy it again from where it came from, or %s", path, where),
		"archive file %s", path)
}

// archiveMismatch is the error for a stored archive whose sha256 or size is
// not the catalog's; cause, if any, is what reading it ran into.
func archiveMismatch(name string, row catalog.Snapshot, hr *hashingReader, cause error) error {
	hint := fmt.Sprintf("the stored archive was altered or damaged and will not restore; restore another snapshot (`director profile snapshots %s`) or take a new one with `director profile snapshot %s`", name, name)
	msg := fmt.Sprintf("snapshot %s: stored archive has sha256 %s and %d bytes, the catalog says %s and %d", row.ID, hr.sum(), hr.n, row.ArchiveSHA256, row.ArchiveSize)
	if cause == nil {
		return errcode.New(errcode.SnapshotCorrupt, "%s", msg).WithHint("%s", hint)
	}
	return errcode.Hinted(cause, errcode.SnapshotCorrupt, hint, "%s", msg)
}

// RebuildResult reports a catalog rebuild.
type RebuildResult struct {
	Store   string   `json:"store"`
	Found   int      `json:"found"`
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Skipped []string `json:"skipped"` // manifests that could not be read, with why
	// Strays are archives without a manifest: no row can come from them.
	// A snapshot killed between storing the two leaves one, and so does a
	// prune or delete killed between deleting them; `profile prune` removes
	// them once they are StrayGrace old.
	Strays []string `json:"strays"`
	// Undecryptable counts the skipped manifests that the identity given
	// (or the lack of one) cannot decrypt; Rebuild then fails with
	// decrypt_failed, after adding every row it could read.
	Undecryptable int `json:"undecryptable"`
	// Busy are the profiles that were in use by another director command
	// for longer than the lock's wait: their manifests were skipped, and
	// Rebuild fails with profile_in_use after doing the rest.
	Busy []string `json:"busy,omitempty"`
}

// Rebuild recreates the catalog's snapshot rows of the Manager's store from
// the manifests in it and drops that store's rows whose archive is gone.
// Rows of other stores are left alone. A manifest that cannot be read is
// skipped; when any was skipped because the Manager has no identity, or
// not the one it was encrypted to, Rebuild still adds and drops every row
// it can and then returns the result with a decrypt_failed error: the
// rebuilt catalog lacks those snapshots until it runs with the right key.
//
// A store that holds no object at all while the catalog lists snapshots
// in it is more likely down than emptied (a file:// store on a disk that
// is not mounted lists as empty): unless allowEmpty, Rebuild then changes
// nothing and fails with storage_unavailable.
func (m *Manager) Rebuild(ctx context.Context, allowEmpty bool) (*RebuildResult, error) {
	store, err := m.catalogStore(ctx)
	if err != nil {
		return nil, err
	}
	// The rows first, then the listing: a snapshot that completes between
	// the two is then in the listing, while a row read before a listing that
	// lacks its archive really points at nothing.
	known, err := m.Catalog.ListSnapshots(ctx, store, "")
	if err != nil {
		return nil, err
	}
	objs, err := m.Store.List(ctx, "")
	if err != nil {
		return nil, err
	}
	if len(known) > 0 && !allowEmpty && len(objs) == 0 {
		return nil, emptyStoreErr(store, fmt.Sprintf("%d snapshot(s)", len(known)), "nothing was changed")
	}
	res := &RebuildResult{Store: store, Added: []string{}, Removed: []string{}, Skipped: []string{}, Strays: []string{}}
	present := map[string]bool{}
	for _, o := range objs {
		present[o.Key] = true
	}
	for _, o := range objs {
		profile, _, _ := strings.Cut(o.Key, "/")
		if id, ok := snapshotIDOfKey(profile, o.Key); ok {
			archive, manifest := objectKeys(profile, id, strings.HasSuffix(o.Key, ".age"))
			if o.Key == archive && !present[manifest] {
				res.Strays = append(res.Strays, o.Key)
			}
		}
	}
	inCatalog := map[string]bool{}
	for _, s := range known {
		inCatalog[s.ID] = true
	}
	// The manifests, profile by profile in the listing's order.
	var profiles []string
	manifests := map[string][]string{}
	for _, o := range objs {
		if profile, _, _, ok := parseManifestKey(o.Key); ok {
			if manifests[profile] == nil {
				profiles = append(profiles, profile)
			}
			manifests[profile] = append(manifests[profile], o.Key)
			res.Found++
		}
	}
	var firstKeyErr error // the first manifest skipped for want of the right key
	for _, profile := range profiles {
		if err := m.rebuildProfile(ctx, store, profile, manifests[profile], inCatalog, res, &firstKeyErr); err != nil {
			return res, err
		}
	}
	for _, s := range known {
		if !present[s.ObjectKey] && !slices.Contains(res.Busy, s.Profile) {
			if err := m.Catalog.DeleteSnapshot(ctx, store, s.ID); err != nil {
				return res, err
			}
			res.Removed = append(res.Removed, s.ID)
		}
	}
	if len(res.Busy) > 0 {
		return res, errcode.New(errcode.ProfileInUse, "catalog rebuild of %s: profile(s) %s were in use by another director command, and their snapshots were left as the catalog had them (%d added, %d removed)",
			store, strings.Join(res.Busy, ", "), len(res.Added), len(res.Removed)).
			WithHint("run `director catalog rebuild` again once the director commands on them have finished (`director profile list` says which profiles are in use)")
	}
	if res.Undecryptable > 0 {
		hint := "set " + encrypt.EnvIdentity + " (or " + encrypt.FlagIdentity + ") to the identity file whose public key the snapshots were encrypted to, " +
			"then run `director catalog rebuild` again; a newly generated key cannot decrypt them"
		if m.UnusedIdentity != nil && errcode.HintOf(m.UnusedIdentity) != "" {
			hint = errcode.HintOf(m.UnusedIdentity) + ", then run `director catalog rebuild` again"
		}
		return res, errcode.Hinted(firstKeyErr, errcode.DecryptFailed, hint,
			"catalog rebuild of %s: %d of %d manifest(s) could not be decrypted and were skipped (%d added, %d removed)",
			store, res.Undecryptable, res.Found, len(res.Added), len(res.Removed))
	}
	return res, nil
}

// rebuildProfile adds the rows of one profile's manifests (keys, from the
// store's listing) under the profile's lock, and with a fresh listing of
// the profile's folder: a prune of the profile that ran after the store was
// listed has deleted rows, manifests and archives, and a row upserted from
// the stale listing would point at a deleted archive; a snapshot that runs
// on it inserts its own row. A profile in use for longer than the lock's
// wait is left as it is, in res.Busy.
func (m *Manager) rebuildProfile(ctx context.Context, store, profile string, keys []string, inCatalog map[string]bool, res *RebuildResult, firstKeyErr *error) error {
	l, err := m.Lock(ctx, profile, 0)
	if errcode.Of(err) == errcode.ProfileInUse {
		res.Busy = append(res.Busy, profile)
		for _, k := range keys {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: profile %s was in use", k, profile))
		}
		return nil
	}
	if err != nil {
		return err
	}
	defer l.Unlock()
	objs, err := m.Store.List(ctx, profile+"/")
	if err != nil {
		return err
	}
	present := make(map[string]bool, len(objs))
	for _, o := range objs {
		present[o.Key] = true
	}
	for _, key := range keys {
		_, id, _, _ := parseManifestKey(key)
		if !present[key] {
			continue // deleted since the listing (a prune): nothing to add
		}
		man, err := m.getManifest(ctx, key)
		if err != nil {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %v", key, err))
			if errcode.Of(err) == errcode.DecryptFailed && encrypt.WrongKey(err) {
				res.Undecryptable++
				if *firstKeyErr == nil {
					*firstKeyErr = fmt.Errorf("%s: %w", key, err)
				}
			}
			continue
		}
		if man.ID != id || man.Profile != profile || !present[man.ArchiveKey] {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: archive %q missing, or the manifest names another snapshot or profile", key, man.ArchiveKey))
			continue
		}
		if err := m.Catalog.UpsertSnapshot(ctx, rowFromManifest(man, key, store)); err != nil {
			return err
		}
		if !inCatalog[id] {
			res.Added = append(res.Added, id)
		}
	}
	return nil
}

// hashingReader counts and hashes what passes through it.
type hashingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func newHashingReader(r io.Reader) *hashingReader {
	return &hashingReader{r: r, h: sha256.New()}
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}

func (h *hashingReader) sum() string { return hex.EncodeToString(h.h.Sum(nil)) }
