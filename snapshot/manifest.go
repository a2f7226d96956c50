package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"time"
)

// FormatVersion is the archive format this build writes. It reads this one
// and versions 1 and 2.
//
//   - Version 1 (until November 2026): the manifest inside the archive lists
//     every file's sha256, so Create read every file twice (a hashing pass,
//     then the archiving pass), and the archive ends with the last file.
//   - Version 2: the manifest inside the archive lists every entry with its
//     type, mode and size but no hashes; Create hashes each file while it
//     archives it (one read), and the archive ends with DigestPath, which
//     holds FilesSHA256. The manifest stored beside the archive lists every
//     file's sha256 as well.
//   - Version 3 (November 2026): as version 2, but a directory that holds a
//     listed entry is not listed itself, nor written to the tar stream: the
//     paths under it imply it (as they do for `tar -x`), and Restore creates
//     it 0700, as it creates every directory. Only directories that hold
//     nothing are listed. An implied directory counts against the entry
//     limit (ExtractOptions.MaxFiles) like a listed one.
const FormatVersion = 3

// ManifestPath is the manifest's path inside an archive; it is the first entry.
const ManifestPath = ".director/manifest.json"

// DigestPath is the last entry of an archive of version 2 or later: a JSON
// Digest.
const DigestPath = ".director/digest.json"

// Digest is the content of DigestPath.
type Digest struct {
	FilesSHA256 string `json:"files_sha256"`
}

// Manifest describes one snapshot. The copy inside the archive holds what is
// known before the first file is written: no file hashes (from version 2),
// and not the archive's own size and hash. The copy stored beside the
// archive has all of them filled in.
type Manifest struct {
	FormatVersion int       `json:"format_version"`
	ID            string    `json:"id"` // "<profile>-<UTC timestamp>-<short random>"
	Profile       string    `json:"profile"`
	CreatedAt     time.Time `json:"created_at"`
	Host          string    `json:"host"`
	OS            string    `json:"os"`                       // runtime.GOOS
	ChromeVersion string    `json:"chrome_version,omitempty"` // from "Last Version"
	Note          string    `json:"note,omitempty"`
	Excludes      []string  `json:"excludes"`
	Includes      []string  `json:"includes,omitempty"` // patterns that re-included excluded paths
	Files         []File    `json:"files"`
	FileCount     int       `json:"file_count"`
	RawSize       int64     `json:"raw_size"` // sum of regular file sizes
	// FilesSHA256 (version 2) is the sha256 of the lines
	// "<sha256 hex>  <path>\n" of every regular file in Files order: what
	// `sha256sum --zero` prints for them with each NUL made a newline (plain
	// `sha256sum` escapes names with a backslash or a newline). Set in the stored copy
	// and in the archive's DigestPath entry.
	FilesSHA256 string `json:"files_sha256,omitempty"`
	// Filled in only in the stored copy:
	ArchiveKey    string `json:"archive_key,omitempty"`
	ArchiveSize   int64  `json:"archive_size,omitempty"`
	ArchiveSHA256 string `json:"archive_sha256,omitempty"` // of the stored bytes (ciphertext when encrypted)
	Encrypted     bool   `json:"encrypted,omitempty"`

	// implied is the number of directories the entries imply but Files
	// does not list (version 3), set by validate.
	implied int
}

// Entries is the number of entries a restore of m creates: those listed,
// and (from version 3) the directories their paths imply. It is set once m
// has been validated (ParseManifest, Create).
func (m *Manifest) Entries() int { return len(m.Files) + m.implied }

// File is one entry of the profile tree, with a slash-separated path
// relative to the profile root.
type File struct {
	Path   string `json:"path"`
	Type   string `json:"type"` // "file", "dir" or "symlink"
	Mode   uint32 `json:"mode"` // the owner's permission bits (ownerPerm): group and other get none
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"` // hex, regular files only; not in the archive's own copy from version 2
	Link   string `json:"link,omitempty"`   // symlink target
}

// filesDigest returns FilesSHA256 for files whose SHA256 fields are set.
func filesDigest(files []File) string {
	h := sha256.New()
	for i := range files {
		if f := &files[i]; f.Type == TypeFile {
			io.WriteString(h, f.SHA256)
			io.WriteString(h, "  ")
			io.WriteString(h, f.Path)
			io.WriteString(h, "\n")
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// inArchive returns the copy of m that an archive starts with from version 2:
// without file hashes and without what only the stored copy knows.
func (m *Manifest) inArchive() *Manifest {
	c := *m
	c.Files = make([]File, len(m.Files))
	for i, f := range m.Files {
		f.SHA256 = ""
		c.Files[i] = f
	}
	c.FilesSHA256, c.ArchiveKey, c.ArchiveSize, c.ArchiveSHA256, c.Encrypted = "", "", 0, "", false
	return &c
}
