package storage

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"
)

// Object describes one stored object.
type Object struct {
	Key      string    `json:"key"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// Store is a flat namespace of immutable objects addressed by slash-separated
// keys such as "work/work-20261122T031700Z-k3x9.tar.zst".
type Store interface {
	// Put streams r into a new object. size is the exact length, or -1 when
	// unknown (the backend then streams in parts). Put never replaces an
	// existing object: it fails with ErrExists. A failed or cancelled Put
	// leaves no partial object behind.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get opens an object for streaming reads. The caller closes it.
	Get(ctx context.Context, key string) (io.ReadCloser, Object, error)
	// Stat describes an object without reading it.
	Stat(ctx context.Context, key string) (Object, error)
	// List returns the objects whose keys start with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Delete removes an object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// String describes the store as a URL without credentials.
	String() string
}

// Sweeper is a Store that can remove what uploads killed midway left under
// a folder prefix ("NAME/") without ever showing it in List: the file
// store's partial temporary files, S3's incomplete multipart uploads.
// `director profile delete --with-snapshots` sweeps the profile's folder.
type Sweeper interface {
	Sweep(ctx context.Context, prefix string) error
}

// ID names a store for records that outlive the process (the catalog): its
// String(), or what a backend whose String() leaves out part of its identity
// says instead (a supabase:// URL does not name the project).
func ID(s Store) string {
	if c, ok := s.(interface{ CatalogID() string }); ok {
		return c.CatalogID()
	}
	return s.String()
}

// Location is the address of key in s for people to read: the store URL
// with the key added to its path, before any query, such as
// "s3://bucket/pfx/work/a.tar.zst?endpoint=host:9000" or
// "file:///home/me/.director/snapshots/work/a.tar.zst". Gluing the key
// after String() would put it inside the query of an s3:// URL.
func Location(s Store, key string) string {
	if l, ok := s.(interface{ Location(key string) string }); ok {
		return l.Location(key)
	}
	return strings.TrimSuffix(s.String(), "/") + "/" + key
}

// Sentinel errors; backends wrap them in errcode errors so that errors.Is
// and errcode.Of both work.
var (
	ErrNotFound    = errors.New("object not found")
	ErrExists      = errors.New("object already exists")
	ErrUnavailable = errors.New("store unavailable")
)
