package session

import (
	"crypto/rand"
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"strings"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
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
	for _, c := range p {
		if c > 0x7f {
			// The browser writes such a host in its ASCII form (bücher.de is
			// xn--bcher-kva.de), which is what every check compares against.
			return fmt.Errorf("%q: write an internationalised domain name in its ASCII (punycode) form, e.g. xn--bcher-kva.de for bücher.de", p)
		}
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("%q is not a valid glob: %v", p, err)
	}
	return nil
}

// MatchDomain reports whether host matches pattern (see ValidatePattern).
// An IP address host matches in its plain form: an IPv4-mapped IPv6 address
// ([::ffff:127.0.0.2], which Chrome writes [::ffff:7f00:2]) is the IPv4
// address it maps, so it matches the entry 127.0.0.2 and globs over it.
func MatchDomain(pattern, host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		a = a.Unmap()
		if p, err := netip.ParseAddr(pattern); err == nil {
			return p.Unmap() == a
		}
		host = a.String()
	}
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
	switch r := p.refuse(rawURL); {
	case r == nil:
		return ""
	case r.entry != "":
		return fmt.Sprintf("%s is on the blocklist (%s)", r.host, r.entry)
	default:
		return fmt.Sprintf("%s is not on the allowlist", r.host)
	}
}

// hint says what lets rawURL through, for the error that refuses it: the
// blocklist entry to remove (an allowlist does not override the
// blocklist), or the host to add to the allowlist.
func (p Policy) hint(rawURL string) string {
	switch r := p.refuse(rawURL); {
	case r == nil:
		return ""
	case r.entry != "":
		return fmt.Sprintf("remove %q from session.blocklist if the workflow really needs %s (the allowlist does not override the blocklist)", r.entry, r.host)
	default:
		return fmt.Sprintf("add %s to session.allowlist if the workflow really needs it", r.host)
	}
}

// refusal is why the policy refuses a URL: the blocklist entry that
// matches its host, or (entry "") the host's absence from the allowlist.
type refusal struct{ host, entry string }

// refuse returns why the policy refuses rawURL, nil when it allows it.
func (p Policy) refuse(rawURL string) *refusal {
	host, ok := checkedHost(rawURL)
	if !ok {
		return nil
	}
	for _, b := range p.Blocklist {
		if MatchDomain(b, host) {
			return &refusal{host: host, entry: b}
		}
	}
	if len(p.Allowlist) == 0 {
		return nil
	}
	for _, a := range p.Allowlist {
		if MatchDomain(a, host) {
			return nil
		}
	}
	return &refusal{host: host}
}

// checkedHost returns the host of an http(s) or ws(s) URL, and false for
// URLs of other schemes, which name no domain. Chrome accepts hosts that
// net/url refuses ("a}b.example.com"), so when net/url fails the host is
// taken out of the authority by hand: a URL the check cannot read must not
// pass it unread.
func checkedHost(rawURL string) (string, bool) {
	if u, err := url.Parse(rawURL); err == nil {
		switch u.Scheme {
		case "http", "https", "ws", "wss":
			return u.Hostname(), true
		}
		return "", false
	}
	scheme, rest, found := strings.Cut(rawURL, ":")
	switch strings.ToLower(scheme) {
	case "http", "https", "ws", "wss":
	default:
		return "", false
	}
	if !found {
		return "", true
	}
	rest = strings.TrimLeft(rest, "/\\")
	if i := strings.IndexAny(rest, "/\\?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = rest[i+1:]
	}
	if strings.HasPrefix(rest, "[") {
		if i := strings.Index(rest, "]"); i >= 0 {
			return rest[1:i], true
		}
	} else if i := strings.LastIndex(rest, ":"); i >= 0 {
		rest = rest[:i]
	}
	if h, err := url.PathUnescape(rest); err == nil {
		rest = h
	}
	return strings.ToLower(rest), true
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

// requestPatterns are the CDP Fetch patterns that put a browser's requests
// under the policy (see Session.guard): every document request, and every
// other request (images, scripts, fetch() and XHR, beacons, workers'
// requests…) whose URL may name a refused host. With an allowlist that is
// every request. With a blocklist only, it is every request whose URL
// contains what an entry could match, so that requests to other hosts go out
// without a round trip through director. The patterns only preselect:
// onRequestPaused decides with Check, so a pattern may match more than the
// policy refuses but never less.
func (p Policy) requestPatterns() []*fetch.RequestPattern {
	pats := []*fetch.RequestPattern{{URLPattern: "*", ResourceType: network.ResourceTypeDocument}}
	if len(p.Allowlist) > 0 {
		return append(pats, &fetch.RequestPattern{URLPattern: "*"})
	}
	for _, b := range p.Blocklist {
		pats = append(pats, &fetch.RequestPattern{URLPattern: "*" + fetchGlob(b) + "*"})
		if a, err := netip.ParseAddr(b); err == nil && a.Is4() {
			pats = append(pats, &fetch.RequestPattern{URLPattern: "*[" + mappedV6(a) + "]*"})
		} else if ipv4Glob(b) {
			pats = append(pats, &fetch.RequestPattern{URLPattern: "*[::ffff:*"})
		}
	}
	return pats
}

// fetchGlob turns a domain pattern into a Fetch URL glob (* and ? only)
// that matches at least the host names the pattern matches: a character
// class […] becomes ?.
func fetchGlob(pattern string) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '[':
			for i++; i < len(pattern) && pattern[i] != ']'; i++ {
				if pattern[i] == '\\' {
					i++
				}
			}
			b.WriteByte('?')
		case '\\':
			if i+1 < len(pattern) {
				i++
				if pattern[i] == '*' || pattern[i] == '?' || pattern[i] == '\\' {
					b.WriteByte('\\')
				}
				b.WriteByte(pattern[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// mappedV6 is the IPv4-mapped IPv6 form of a, as Chrome writes it in URLs
// (::ffff:7f00:2 for 127.0.0.2).
func mappedV6(a netip.Addr) string {
	b := a.As4()
	return fmt.Sprintf("::ffff:%x:%x", uint16(b[0])<<8|uint16(b[1]), uint16(b[2])<<8|uint16(b[3]))
}

// ipv4Glob reports whether pattern is a glob that can match IPv4 addresses
// (127.0.0.*, 10.?.0.1): its IPv4-mapped IPv6 forms are then refused too.
func ipv4Glob(pattern string) bool {
	if !strings.ContainsAny(pattern, "*?[") {
		return false
	}
	// Only the characters outside […] classes decide: a class may list
	// anything and still match a digit.
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '[':
			for i++; i < len(pattern) && pattern[i] != ']'; i++ {
				if pattern[i] == '\\' {
					i++
				}
			}
		case c == '\\':
			i++
			if i < len(pattern) && !strings.ContainsRune("0123456789.", rune(pattern[i])) {
				return false
			}
		case !strings.ContainsRune("0123456789.*?", rune(c)):
			return false
		}
	}
	return true
}

// webSocketRules are the network conditions that refuse WebSocket
// connections to the hosts the policy refuses: CDP Fetch does not see
// WebSocket handshakes, so each tab gets these rules
// (Network.emulateNetworkConditionsByRule), which take the connection
// offline before it leaves the browser. The first rule that matches wins:
// blocked hosts, then (with an allowlist) the allowed hosts, which pass
// unchanged, then every other ws(s) URL. Unlike the Fetch patterns these
// rules decide on their own, so they match exactly the hosts Check refuses
// (and, for entries that can match IPv4 addresses, their IPv4-mapped IPv6
// forms). Chrome's URL patterns here take no regular expressions, so a ? or
// […] of a glob is spelled out over the characters of host names (up to
// maxHostVariants patterns; beyond that a ? or class widens to *, which
// refuses more WebSockets than the blocklist, never fewer). Nil when the
// policy is empty.
func (p Policy) webSocketRules() []*network.Conditions {
	var rules []*network.Conditions
	add := func(pattern string, offline bool) {
		for _, h := range hostPatterns(pattern, !offline) {
			for _, scheme := range []string{"ws", "wss"} {
				rules = append(rules, &network.Conditions{URLPattern: scheme + "://" + h + ":*/*", Offline: offline, DownloadThroughput: -1, UploadThroughput: -1})
			}
		}
	}
	for _, b := range p.Blocklist {
		add(b, true)
	}
	if len(p.Allowlist) > 0 {
		for _, a := range p.Allowlist {
			add(a, false)
		}
		add("*", true)
	}
	return rules
}

// hostChars are the characters of a canonical host name, what a ? or a
// character class of a domain pattern can match in one.
const hostChars = "abcdefghijklmnopqrstuvwxyz0123456789-_."

// maxHostVariants bounds the URL patterns one glob spells out.
const maxHostVariants = 256

// hostPatterns are hostname patterns, in the URLPattern syntax Chrome takes
// in Network.emulateNetworkConditionsByRule (no regular expressions), that
// together match the canonical host names MatchDomain(pattern, host)
// accepts. For a refusing rule they may match more; for an allowing one
// (allow) never more, so an allow glob too wide to spell out gives none.
func hostPatterns(pattern string, allow bool) []string {
	if !strings.ContainsAny(pattern, "*?[") {
		out := []string{"{*.}?" + urlPatternQuote(pattern) + "{.}?"}
		if a, err := netip.ParseAddr(pattern); err == nil && a.Is4() {
			out = append(out, "["+urlPatternQuote(mappedV6(a))+"]")
		}
		return out
	}
	// Each piece is a literal, *, or a set of characters (? and […]).
	variants := []string{""}
	widen := false
	appendAll := func(alts []string) {
		if widen || len(variants)*len(alts) > maxHostVariants {
			widen = true
		}
		if widen {
			if len(alts) > 1 {
				alts = []string{"*"}
			}
			for i := range variants {
				variants[i] += alts[0]
			}
			return
		}
		var next []string
		for _, v := range variants {
			for _, a := range alts {
				next = append(next, v+a)
			}
		}
		variants = next
	}
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			appendAll([]string{"*"})
		case '?':
			appendAll(chars(hostChars))
		case '[':
			set, negate, end := globClass(pattern, i)
			i = end
			var alts []string
			for _, x := range []byte(hostChars) {
				if strings.IndexByte(string(set), x) >= 0 != negate {
					alts = append(alts, urlPatternQuote(string(x)))
				}
			}
			if len(alts) == 0 {
				return nil // matches no host name
			}
			appendAll(alts)
		case '\\':
			if i+1 < len(pattern) {
				i++
				appendAll([]string{urlPatternQuote(pattern[i : i+1])})
			}
		default:
			appendAll([]string{urlPatternQuote(string(c))})
		}
	}
	for i := range variants {
		variants[i] += "{.}?"
	}
	if allow && widen {
		// A widened allow rule would let through WebSockets the allowlist
		// refuses; without it they meet the final refuse-all rule instead.
		return nil
	}
	if ipv4Glob(pattern) && !allow {
		// No glob can spell the hex of a mapped address: refuse them all
		// (an allow rule must not let them all through).
		variants = append(variants, `[\:\:ffff\:*]`)
	}
	return variants
}

// globClass reads the character class […] of a domain pattern that opens
// at pattern[i]: the bytes it lists (ranges spelled out, \ escapes
// resolved), whether it is negated ([^…]), and the index of its ].
func globClass(pattern string, i int) (set []byte, negate bool, end int) {
	j := i + 1
	negate = j < len(pattern) && pattern[j] == '^'
	if negate {
		j++
	}
	for ; j < len(pattern) && pattern[j] != ']'; j++ {
		lo := pattern[j]
		if lo == '\\' && j+1 < len(pattern) {
			j++
			lo = pattern[j]
		}
		hi := lo
		if j+2 < len(pattern) && pattern[j+1] == '-' && pattern[j+2] != ']' {
			hi = pattern[j+2]
			if hi == '\\' && j+3 < len(pattern) {
				j++
				hi = pattern[j+2]
			}
			j += 2
		}
		for x := lo; x >= lo && x <= hi; x++ {
			set = append(set, x)
			if x == 0xff {
				break
			}
		}
	}
	return set, negate, j
}

func chars(s string) []string {
	out := make([]string, len(s))
	for i := range s {
		out[i] = s[i : i+1]
	}
	return out
}

// urlPatternQuote escapes the characters that URLPattern syntax gives a
// meaning to.
func urlPatternQuote(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*:(){}?+\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
