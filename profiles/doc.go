// Package profiles owns the local profile registry and the use-cases that
// move a profile in and out of storage: create, list, delete, lock, snapshot,
// restore, verify, prune, and rebuilding the catalog from the store.
//
// Every use-case takes the profile's lock (gofrs/flock on a file beside the
// profile, so it survives the directory swap of a restore; when the profile
// does not exist at unlock, the lock file is removed while still held, and
// Lock retries when the file it locked is no longer the one at the path),
// refuses a profile Chrome is running on, and keeps one invariant: the
// catalog never has a row for an archive that is not fully stored. A snapshot stores the
// archive, then its manifest, and inserts the catalog row last; prune deletes
// the row first and the objects after.
//
// The catalog may index several stores; a Manager works on the snapshot rows
// of its own Store only (listing, latest, prune, delete, verify, restore,
// rebuild), and records that store in every row it inserts.
package profiles
