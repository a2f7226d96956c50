package snapshot

import (
	"path"
	"strings"

	"director/errcode"
)

// RuntimeFiles are files Chrome creates while it runs on a profile. They are
// never archived, whatever the excludes and includes say: restoring them makes
// Chrome refuse the profile or attach to a dead DevTools port.
func RuntimeFiles() []string {
	return []string{"SingletonLock", "SingletonSocket", "SingletonCookie", "DevToolsActivePort"}
}

// DefaultExcludes returns the patterns excluded when CreateOptions.Excludes is
// nil: caches and crash/metrics data Chrome rebuilds by itself. Never in the
// list: Cookies (Default/Cookies on Linux and macOS, Default/Network/Cookies
// on Windows), Local Storage, Session Storage, IndexedDB, Web Data,
// Login Data, Preferences, Secure Preferences, Local State.
//
// A pattern is a path.Match glob over slash-separated paths relative to the
// profile root. A pattern without a leading "/" matches at any depth ("Cache"
// matches "Default/Cache" and "Profile 1/Cache"; "Service Worker/CacheStorage"
// matches "Default/Service Worker/CacheStorage"); a leading "/" anchors it at
// the root. A matched directory is excluded with everything below it.
func DefaultExcludes() []string {
	return []string{
		"Cache",
		"Code Cache",
		"GPUCache",
		"GrShaderCache",
		"ShaderCache",
		"DawnCache",
		"DawnGraphiteCache",
		"DawnWebGPUCache",
		"GPUPersistentCache",
		"Service Worker/CacheStorage",
		"Service Worker/ScriptCache",
		"component_crx_cache",
		"extensions_crx_cache",
		"Crashpad",
		"BrowserMetrics*",
		"optimization_guide_model_store",
	}
}

type pattern struct {
	glob     string
	anchored bool
	parts    int // number of path components the glob spans
}

func compilePatterns(kind string, globs []string) ([]pattern, error) {
	ps := make([]pattern, 0, len(globs))
	for _, g := range globs {
		p := pattern{glob: g}
		if strings.HasPrefix(g, "/") {
			p.anchored, p.glob = true, strings.TrimPrefix(g, "/")
		}
		p.glob = strings.TrimSuffix(p.glob, "/")
		if p.glob == "" {
			return nil, errcode.New(errcode.InvalidInput, "empty %s pattern %q", kind, g).
				WithHint("give a glob relative to the profile root, such as \"Cache\" or \"Default/File System\"")
		}
		if _, err := path.Match(p.glob, ""); err != nil {
			return nil, errcode.New(errcode.InvalidInput, "bad %s pattern %q: %v", kind, g, err).
				WithHint("use path.Match syntax: * ? [a-z] and \\ to escape")
		}
		p.parts = strings.Count(p.glob, "/") + 1
		ps = append(ps, p)
	}
	return ps, nil
}

// match reports whether rel (slash-separated, relative to the root) matches.
func (p pattern) match(rel string) bool {
	if p.anchored {
		ok, _ := path.Match(p.glob, rel)
		return ok
	}
	// A glob's "*" never crosses "/", so it can only match the last p.parts
	// components of rel.
	idx, k := len(rel), p.parts
	for ; k > 0; k-- {
		if idx = strings.LastIndexByte(rel[:idx], '/'); idx < 0 {
			break
		}
	}
	if k > 1 {
		return false // rel has fewer components than the glob
	}
	ok, _ := path.Match(p.glob, rel[idx+1:])
	return ok
}

// selector decides which paths of a profile tree go into a snapshot.
type selector struct {
	excludes, includes []pattern
	runtime            map[string]bool
}

func newSelector(excludes, includes []string) (*selector, error) {
	ex, err := compilePatterns("exclude", excludes)
	if err != nil {
		return nil, err
	}
	in, err := compilePatterns("include", includes)
	if err != nil {
		return nil, err
	}
	s := &selector{excludes: ex, includes: in, runtime: map[string]bool{}}
	for _, n := range RuntimeFiles() {
		s.runtime[n] = true
	}
	return s, nil
}

func anyMatch(ps []pattern, rel string) bool {
	for _, p := range ps {
		if p.match(rel) {
			return true
		}
	}
	return false
}

// never reports paths that are not archived whatever the patterns say: the
// runtime files at any depth and the reserved .director directory at the root.
func (s *selector) never(rel string) bool {
	if rel == ".director" || strings.HasPrefix(rel, ".director/") {
		return true
	}
	return s.runtime[path.Base(rel)]
}

// excluded reports whether rel is left out: it or an ancestor matches an
// exclude, and neither it nor an ancestor matches an include.
func (s *selector) excluded(rel string) bool {
	if s.never(rel) {
		return true
	}
	ex := false
	for p := rel; ; {
		if anyMatch(s.includes, p) {
			return false
		}
		if !ex && anyMatch(s.excludes, p) {
			ex = true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return ex
		}
		p = p[:i]
	}
}
