package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"director/errcode"
)

// Entry types of File.Type.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// maxFileSize bounds one file's declared size, so that totals cannot overflow.
const maxFileSize = 1 << 50

// ParseManifest decodes and validates a manifest. It is strict: unknown
// fields, an unknown format version, unsafe or duplicate paths, an entry
// inside one that is not a directory or, before version 3, inside a
// directory not listed before it, a symlink that resolves outside the root
// and totals that do not add up are all errors (unsafe_archive for anything
// that would write outside the profile, snapshot_corrupt for the rest).
//
// The format version is read first, leniently: a manifest of a format newer
// than FormatVersion fails with a NewerFormatError in its chain, whatever
// fields the newer format added, so that a snapshot a newer director wrote
// is never reported as damaged.
func ParseManifest(b []byte) (*Manifest, error) {
	var head struct {
		FormatVersion int `json:"format_version"`
	}
	if json.Unmarshal(b, &head) == nil && head.FormatVersion > FormatVersion {
		return nil, newerFormat(head.FormatVersion)
	}
	// Counted before decoding builds every entry: a manifest planted in a
	// shared store is read here too, not only the one in an archive.
	if countEntries(b, DefaultMaxFiles) > DefaultMaxFiles {
		return nil, unsafeArchive("the manifest lists more than %d entries, the limit", DefaultMaxFiles)
	}
	var m Manifest
	if err := decodeStrict(b, &m, "manifest"); err != nil {
		return nil, err
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// countEntries counts the objects in the top-level "files" array of the
// manifest b (its key matched as encoding/json matches it, ignoring case),
// streaming its tokens, and stops once it passes limit: a bound checked
// before decoding builds every entry. JSON it cannot read counts 0, for
// ParseManifest to report.
func countEntries(b []byte, limit int) int {
	if len(b) < 1<<20 {
		return 0 // a small manifest holds too few entries to matter
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, n := 0, 0
	inFiles, wantValue := false, false
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if depth == 2 && inFiles && t == '{' {
					if n++; n > limit {
						return n
					}
				}
				depth++
			case '}', ']':
				depth--
				if depth == 1 {
					inFiles = false
				}
			}
			wantValue = false
		case string:
			if depth == 1 && !wantValue {
				// A key of the top-level object; its value follows.
				inFiles, wantValue = strings.EqualFold(t, "files"), true
				continue
			}
			wantValue = false
		default:
			wantValue = false
		}
		if depth == 1 && !wantValue {
			inFiles = false
		}
	}
}

// decodeStrict decodes b, one JSON object naming no field v lacks, into v;
// what names it in errors.
func decodeStrict(b []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return corrupt(err, "%s is not valid JSON", what)
	}
	if _, err := dec.Token(); err != io.EOF {
		return corrupt(nil, "%s has data after its JSON object", what)
	}
	return nil
}

// validate checks what ParseManifest promises; Create runs it too, so that it
// never writes an archive Restore would refuse.
func (m *Manifest) validate() error {
	if m.FormatVersion < 1 || m.FormatVersion > FormatVersion {
		return errcode.New(errcode.SnapshotCorrupt, "manifest format version %d is not supported (this director reads versions 1 to %d)",
			m.FormatVersion, FormatVersion).WithHint(hintUpgrade)
	}
	// Commands print these, and no director ever wrote a control
	// character in one: it would drive the terminal of whoever restores or
	// lists the snapshot. (The note and the host are not refused: older
	// directors stored --note as given, and such a snapshot must stay
	// restorable; commands escape them where they print them.)
	for _, f := range []struct{ name, v string }{{"id", m.ID}, {"profile", m.Profile}, {"os", m.OS},
		{"chrome_version", m.ChromeVersion}, {"archive_key", m.ArchiveKey}} {
		if i := strings.IndexFunc(f.v, isControl); i >= 0 {
			r, _ := utf8.DecodeRuneInString(f.v[i:])
			return corrupt(nil, "manifest field %s holds a control character (%U at byte %d)", f.name, r, i)
		}
	}
	byPath := make(map[string]*File, len(m.Files))
	implied := map[string]bool{} // directories no entry lists, above listed ones (version 3)
	var files, hashed int
	var raw int64
	for i := range m.Files {
		f := &m.Files[i]
		if err := checkPath(f.Path); err != nil {
			return err
		}
		if byPath[f.Path] != nil {
			return unsafeArchive("manifest lists %q twice", f.Path)
		}
		if implied[f.Path] {
			return unsafeArchive("manifest lists %q after entries inside it", f.Path)
		}
		// Every directory above f is listed before it, or (from version
		// 3) implied by f's path; one that is listed must be a directory.
		for dir := parentDir(f.Path); dir != "."; dir = parentDir(dir) {
			if p := byPath[dir]; p != nil {
				if p.Type != TypeDir {
					return unsafeArchive("manifest lists %q inside %q, which is a %s, not a directory", f.Path, dir, p.Type)
				}
				break
			}
			if m.FormatVersion < 3 {
				return unsafeArchive("manifest lists %q before its directory %q", f.Path, dir)
			}
			if implied[dir] {
				break
			}
			// checkPath(f.Path) covers what it refuses of a path for
			// its prefixes too, but for a runtime file's name, which is a
			// whole path: restored, a directory SingletonLock makes the
			// profile unusable as surely as a symlink does.
			if !strings.Contains(dir, "/") && slices.Contains(RuntimeFiles(), dir) {
				return unsafeArchive("path %q is inside %q, a file Chrome makes while it runs; no snapshot holds one", f.Path, dir)
			}
			implied[dir] = true
			if len(m.Files)+len(implied) > DefaultMaxFiles {
				return errTooManyEntries() // stops early: implied directories take memory here
			}
		}
		byPath[f.Path] = f
		if f.Mode&^0o777 != 0 {
			return unsafeArchive("manifest gives %q mode %#o; only permission bits are allowed", f.Path, f.Mode)
		}
		switch f.Type {
		case TypeFile:
			if f.Size < 0 || f.Size > maxFileSize {
				return corrupt(nil, "manifest gives %q size %d", f.Path, f.Size)
			}
			if f.SHA256 != "" || m.FormatVersion == 1 {
				if !isSHA256Hex(f.SHA256) {
					return corrupt(nil, "manifest gives %q no valid sha256", f.Path)
				}
				hashed++
			}
			if f.Link != "" {
				return corrupt(nil, "manifest gives file %q a link target", f.Path)
			}
			files++
			raw += f.Size
		case TypeDir, TypeSymlink:
			if f.Size != 0 || f.SHA256 != "" {
				return corrupt(nil, "manifest gives %s %q a size or hash", f.Type, f.Path)
			}
			if (f.Type == TypeSymlink) != (f.Link != "") {
				return corrupt(nil, "manifest entry %q: only a symlink has a link target, and it must not be empty", f.Path)
			}
		default:
			return unsafeArchive("manifest gives %q type %q; only file, dir and symlink are allowed", f.Path, f.Type)
		}
	}
	if len(m.Files)+len(implied) > DefaultMaxFiles {
		return errTooManyEntries()
	}
	m.implied = len(implied)
	if files != m.FileCount || raw != m.RawSize {
		return corrupt(nil, "manifest totals (%d files, %d bytes) do not match its list (%d files, %d bytes)",
			m.FileCount, m.RawSize, files, raw)
	}
	if err := m.validateHashes(files, hashed); err != nil {
		return err
	}
	budget := maxLinkSteps
	for i := range m.Files {
		if f := &m.Files[i]; f.Type == TypeSymlink {
			if err := checkLink(f.Path, f.Link, byPath, &budget); err != nil {
				return err
			}
		}
	}
	return nil
}

func errTooManyEntries() error {
	return unsafeArchive("the manifest's entries and the directories they imply are more than %d, the limit", DefaultMaxFiles)
}

// parentDir is path.Dir of a path checkPath accepted, without cleaning it
// again: a step up a deep path costs nothing.
func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

// isControl says whether r is a C0 or C1 control character or DEL, which a
// terminal may take as a command (ESC starts most of them).
func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r < 0xa0 }

// HasControl says whether s holds a control character (a newline, ESC…),
// which no manifest text field may: a note with one would make a snapshot
// that no director reads.
func HasControl(s string) bool { return strings.IndexFunc(s, isControl) >= 0 }

// MaxLinkLen bounds a symlink's target: Linux stores at most PATH_MAX-1
// bytes in one, so no profile holds a longer one.
const MaxLinkLen = 4095

// maxLinkSteps bounds the path components checkLink walks over a whole
// manifest, following links into links: a Chrome profile has a handful of
// symlinks, and a hostile manifest of long, nested ones would otherwise
// keep restore, verify and catalog rebuild busy for hours.
const maxLinkSteps = 1 << 18

// validateHashes checks that the file hashes come in one of the forms a
// manifest has: every file's in version 1; in version 2 none (the archive's
// own copy) or every file's and their digest (the stored copy).
func (m *Manifest) validateHashes(files, hashed int) error {
	if m.FormatVersion == 1 {
		if m.FilesSHA256 != "" {
			return corrupt(nil, "a version 1 manifest has no files_sha256")
		}
		return nil
	}
	switch {
	case m.FilesSHA256 == "" && hashed == 0:
		return nil
	case m.FilesSHA256 == "":
		return corrupt(nil, "manifest lists file hashes without their files_sha256")
	case hashed != files:
		return corrupt(nil, "manifest has files_sha256 but lists the sha256 of %d of its %d files", hashed, files)
	case filesDigest(m.Files) != m.FilesSHA256:
		return corrupt(nil, "manifest files_sha256 does not match the file hashes it lists")
	}
	return nil
}

// checkPath accepts a clean, relative, slash-separated path inside the root.
func checkPath(p string) error {
	switch {
	case p == "":
		return unsafeArchive("empty path")
	case strings.HasPrefix(p, "/"):
		return unsafeArchive("absolute path %q", p)
	case p == ".." || strings.HasPrefix(p, "../") || strings.HasSuffix(p, "/..") || strings.Contains(p, "/../"):
		return unsafeArchive("path %q climbs out with \"..\"", p)
	case strings.IndexByte(p, 0) >= 0 || !fs.ValidPath(p) || p == ".":
		return unsafeArchive("path %q is not a clean relative path", p)
	case p == ".director" || strings.HasPrefix(p, ".director/"):
		return unsafeArchive("path %q is inside the reserved .director directory", p)
	case len(p) > MaxPathLen:
		return unsafeArchive("path %.40q… is %d bytes long, more than the %d a profile can hold", p, len(p), MaxPathLen)
	case slices.Contains(RuntimeFiles(), p):
		// Restored, a SingletonLock naming another host or a live pid makes
		// Chrome and director take the profile for one in use, for good.
		return unsafeArchive("path %q is a file Chrome makes while it runs; no snapshot holds one", p)
	}
	return nil
}

// MaxPathLen bounds an entry's path inside the profile. Linux's PATH_MAX is
// 4096 bytes for the whole path; the rest is left for the profile's own
// location, so that a restored profile can be snapshotted again.
const MaxPathLen = 3072

// checkLink resolves the symlink at p with target link over the manifest's own
// tree, following the manifest's other symlinks, and refuses any that leaves
// the root. A purely lexical check is not enough: with d/y -> "..", the target
// "d/y/../.." of a link at the root climbs one level above it.
func checkLink(p, link string, byPath map[string]*File, budget *int) error {
	escapes := func(why string) error {
		return unsafeArchive("symlink %.60q -> %.60q %s", p, link, why)
	}
	if len(link) > MaxLinkLen {
		return escapes(fmt.Sprintf("has a target of %d bytes, more than the %d a symlink can hold", len(link), MaxLinkLen))
	}
	if strings.HasPrefix(link, "/") {
		return escapes("has an absolute target")
	}
	if strings.IndexByte(link, 0) >= 0 {
		return escapes("has a NUL byte in its target")
	}
	// cur is the path resolved so far; ends[i] is its length after its
	// i-th component, so that ".." drops one in constant time and the
	// lookups never join the components again.
	var (
		cur  []byte
		ends []int
	)
	push := func(c string) {
		if len(cur) > 0 {
			cur = append(cur, '/')
		}
		cur = append(cur, c...)
		ends = append(ends, len(cur))
	}
	pop := func() {
		ends = ends[:len(ends)-1]
		cur = cur[:0]
		if n := len(ends); n > 0 {
			cur = cur[:ends[n-1]]
		}
	}
	if d := path.Dir(p); d != "." {
		for _, c := range strings.Split(d, "/") {
			push(c)
		}
	}
	queue := strings.Split(link, "/")
	for hops := 0; len(queue) > 0; {
		if *budget--; *budget < 0 {
			return escapes("is one of symlinks too long or too deeply nested to check")
		}
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(ends) == 0 {
				return escapes("points outside the profile")
			}
			pop()
			continue
		}
		push(c)
		if len(cur) > MaxPathLen {
			continue // no entry has so long a path
		}
		f := byPath[string(cur)]
		if f == nil || f.Type != TypeSymlink {
			continue
		}
		if hops++; hops > 40 {
			return escapes("has too many levels of symlinks")
		}
		if strings.HasPrefix(f.Link, "/") {
			return escapes(fmt.Sprintf("resolves through %q, which has an absolute target", f.Path))
		}
		pop()
		queue = append(strings.Split(f.Link, "/"), queue...)
	}
	return nil
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
