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
//
// A store may be shared by several machines, each with its own catalog.
// Restore and verify of "latest", and prune, first add to the catalog the
// snapshots other machines stored (reading only their manifests), so that
// "latest" and "the last N" are the store's; a row whose archive another
// machine deleted is reported as such (catalog rebuild drops it). Prune and
// delete --with-snapshots leave an archive without its manifest that is
// younger than StrayGrace by the store's clock: it may be another machine's
// snapshot between storing the two.
package profiles
