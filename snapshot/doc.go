// Package snapshot owns director's archive format and its two directions.
//
// Create walks a Chrome user-data-dir, skipping the runtime files (always)
// and the excludes (DefaultExcludes unless told otherwise), and streams a tar
// archive (format 3) whose first entry is .director/manifest.json (format
// version, profile, Chrome version, every entry with type, size and mode,
// except the directories that other entries' paths imply),
// then every file, hashed with sha256 while it is read, and last
// .director/digest.json, the digest of those hashes. It returns the complete
// manifest, with every file's sha256, for the caller to store beside the
// archive. The tar stream is cut into 4 MiB chunks compressed on two cores,
// each with the last 256 KiB of the one before as history, and their blocks
// are written in order as one zstd frame, as `zstd -T0` writes it: memory
// stays bounded and matches reach across chunk boundaries.
// A file that changes after the walk, or while it is read, fails the
// snapshot. Plain `tar --zstd -xf` reads the archives.
//
// Restore streams an archive into a fresh sibling temp dir through os.Root
// and rejects anything unsafe: traversal, absolute paths, symlinks that
// resolve outside the profile (following the archive's own symlinks),
// entries written through a symlink, hardlinks, devices, fifos, duplicates,
// entries absent from the manifest or larger than it says, a manifest that is
// not the first entry, and archives past the size, unpacked-size (bomb) and
// file-count bounds. It checks every file's sha256 (against the digest
// entry, against the manifest in a format 1 archive, and against the stored
// manifest when the caller gives it), reads the stream to its end (the zstd
// checksum), syncs the tree to disk (one syncfs on Linux), and only then
// swaps the directories, atomically where the
// system can (renameat2 RENAME_EXCHANGE on Linux). On any error the old
// profile is untouched and the temp dir is gone. Verify runs the same checks
// without writing anything.
//
// Errors carry errcode codes: unsafe_archive for an archive that tries
// something a snapshot never does, snapshot_corrupt for damage (hash
// mismatch, broken zstd or tar, truncation, missing files), profile_in_use
// for a profile that changed while it was archived, invalid_input for bad
// patterns or a profile that cannot be archived safely, internal_error for
// local I/O. An error from the caller's reader keeps its own code.
//
// Memory does not grow with profile size (only the manifest's file list
// does). The package imports nothing of the project but the leaf package
// errcode.
package snapshot
