// Package snapshot owns director's archive format and its two directions.
//
// Create walks a Chrome user-data-dir, skipping runtime files and the default
// excludes, and streams a tar archive compressed with zstd whose first entry
// is .director/manifest.json (format version, profile, Chrome version, every
// file with size, mode and sha256). Restore streams an archive into a fresh
// sibling temp dir through os.Root, rejects anything unsafe (traversal,
// absolute paths, escaping symlinks, hardlinks, devices, duplicates, entries
// absent from the manifest or larger than it says, decompression bombs),
// checks every file against the manifest, fsyncs, and only then swaps the
// directories by rename. On any error the old profile is untouched.
//
// Memory does not grow with profile size. The package imports nothing of the
// project but the leaf package errcode.
package snapshot
