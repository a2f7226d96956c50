package session

import (
	"crypto/rand"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/chromedp/chromedp/kb"
)

// NewID returns a fresh session id: 6 characters of [a-z2-7] (base32) from
// crypto/rand.
func NewID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("session: crypto/rand failed: " + err.Error()) // never happens on supported systems
	}
	for i := range b {
		b[i] = alphabet[b[i]&31]
	}
	return string(b[:])
}

// ValidID reports whether id has the shape NewID gives.
func ValidID(id string) bool {
	if len(id) != 6 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// ValidatePattern checks a blocklist or allowlist entry. A pattern is a
// host name such as example.com (which also covers its subdomains) or a
// glob such as *.example.com or ads?.example.net, matched against the whole
// host name without port.
func ValidatePattern(p string) error {
	if p == "" {
		return fmt.Errorf("empty domain pattern")
	}
	if strings.ContainsAny(p, "/:@ ") {
		return fmt.Errorf("%q is not a domain pattern: write a host name or glob such as example.com or *.example.com, without scheme, port or path", p)
	}
	if p != strings.ToLower(p) {
		return fmt.Errorf("%q: write domain patterns in lowercase", p)
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("%q is not a valid glob: %v", p, err)
	}
	return nil
}

// MatchDomain reports whether host matches pattern (see ValidatePattern).
func MatchDomain(pattern, host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if !strings.ContainsAny(pattern, "*?[") {
		return host == pattern || strings.HasSuffix(host, "."+pattern)
	}
	ok, _ := path.Match(pattern, host)
	return ok
}

// Policy is the set of domains a session may visit.
type Policy struct {
	Blocklist []string
	Allowlist []string // empty: every domain not blocked is allowed
}

// Check returns the reason rawURL is not allowed, or "" when it is. Only
// http(s) and ws(s) URLs name a domain; about:, data:, blob: and
// chrome-error: pages are always allowed.
func (p Policy) Check(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	default:
		return ""
	}
	host := u.Hostname()
	for _, b := range p.Blocklist {
		if MatchDomain(b, host) {
			return fmt.Sprintf("%s is on the blocklist (%s)", host, b)
		}
	}
	if len(p.Allowlist) == 0 {
		return ""
	}
	for _, a := range p.Allowlist {
		if MatchDomain(a, host) {
			return ""
		}
	}
	return fmt.Sprintf("%s is not on the allowlist", host)
}

// Host returns the host name of rawURL, or "" when it has none.
func Host(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// keyNames maps the names a workflow may use for press to chromedp keys.
func keyNames() map[string]string {
	return map[string]string{
		"enter": kb.Enter, "return": kb.Enter, "tab": kb.Tab, "escape": kb.Escape, "esc": kb.Escape,
		"backspace": kb.Backspace, "delete": kb.Delete, "space": " ",
		"arrowdown": kb.ArrowDown, "arrowup": kb.ArrowUp, "arrowleft": kb.ArrowLeft, "arrowright": kb.ArrowRight,
		"down": kb.ArrowDown, "up": kb.ArrowUp, "left": kb.ArrowLeft, "right": kb.ArrowRight,
		"home": kb.Home, "end": kb.End, "pagedown": kb.PageDown, "pageup": kb.PageUp,
		"f1": kb.F1, "f2": kb.F2, "f3": kb.F3, "f4": kb.F4, "f5": kb.F5, "f6": kb.F6,
		"f7": kb.F7, "f8": kb.F8, "f9": kb.F9, "f10": kb.F10, "f11": kb.F11, "f12": kb.F12,
	}
}

// KeyByName returns the key sequence for a key name (Enter, Tab, Escape,
// ArrowDown, …) or a single printable character.
func KeyByName(name string) (string, bool) {
	if k, ok := keyNames()[strings.ToLower(name)]; ok {
		return k, true
	}
	if r := []rune(name); len(r) == 1 && r[0] >= ' ' {
		return name, true
	}
	return "", false
}
