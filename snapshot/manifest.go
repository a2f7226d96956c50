package snapshot

import "time"

// FormatVersion is the manifest format this build writes and reads.
const FormatVersion = 1

// ManifestPath is the manifest's path inside an archive; it is the first entry.
const ManifestPath = ".director/manifest.json"

// Manifest describes one snapshot. The copy inside the archive cannot know
// the archive's own size and hash; the copy stored beside the archive (and in
// the catalog) has them filled in.
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
	// Filled in only in the stored copy:
	ArchiveKey    string `json:"archive_key,omitempty"`
	ArchiveSize   int64  `json:"archive_size,omitempty"`
	ArchiveSHA256 string `json:"archive_sha256,omitempty"` // of the stored bytes (ciphertext when encrypted)
	Encrypted     bool   `json:"encrypted,omitempty"`
}

// File is one entry of the profile tree, with a slash-separated path
// relative to the profile root.
type File struct {
	Path   string `json:"path"`
	Type   string `json:"type"` // "file", "dir" or "symlink"
	Mode   uint32 `json:"mode"` // permission bits
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"` // hex, regular files only
	Link   string `json:"link,omitempty"`   // symlink target
}
