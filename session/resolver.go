package session

import (
	"net/netip"
	"strings"
)

// ResolverRules are Chrome --host-resolver-rules (launcher.Options.
// HostResolverRules) under which Chrome refuses to resolve the host names
// the policy refuses: "MAP pattern ~NOTFOUND" for each blocklist entry and,
// with an allowlist, "MAP * ~NOTFOUND" with an "EXCLUDE pattern" for each
// allowlist entry. Nil for an empty policy.
//
// They are the second line of the policy, under the Fetch check and the
// per-tab WebSocket rules that name and record what they refuse. Name
// resolution is where every connection of the browser passes, whichever
// target makes it: so it also refuses what those checks cannot see, above
// all the WebSockets of workers, of cross-site frames and of a popup's first
// page, which Chrome runs as targets of their own. Such a connection fails as
// if the host did not exist, and is not recorded.
//
// Chrome matches a rule's pattern (* and ? only) against the whole host
// name, so each entry becomes the patterns that match the host names
// MatchDomain accepts: example.com gives example.com and *.example.com, and
// the same with the trailing dot a URL may carry; a character class is
// spelled out over its characters (up to maxHostVariants patterns). Where
// that is not possible (a negated class, a class too large), or where Chrome
// could match the pattern against a port (it tries "host:port" when the
// host alone does not match, and *1 matches "localhost:18081"; see
// portSafe), a blocklist entry is left to the other checks, so that these
// rules never refuse a host the policy allows; an allowlist entry is widened instead (? for the
// class), which only lets more names resolve. An IPv4 entry also refuses
// its IPv4-mapped IPv6 form (::ffff:7f00:2 for 127.0.0.2), and an IPv4 glob
// every such form, which no site needs.
//
// Chrome applies EXCLUDE rules before all MAP rules, so a blocklist entry
// inside an allowlist entry (ads.example.com with example.com allowed) is
// left to the other checks. Behind a proxy, Chrome does not resolve the
// hosts it reaches through the proxy, and these rules do not see them.
func (p Policy) ResolverRules() []string {
	var rules []string
	for _, b := range p.Blocklist {
		pats, exact := resolverPatterns(b)
		if !exact {
			continue
		}
		for _, pat := range pats {
			rules = append(rules, "MAP "+pat+" ~NOTFOUND")
		}
	}
	if len(p.Allowlist) > 0 {
		rules = append(rules, "MAP * ~NOTFOUND")
		for _, a := range p.Allowlist {
			pats, _ := resolverPatterns(a)
			for _, pat := range pats {
				rules = append(rules, "EXCLUDE "+pat)
			}
		}
	}
	return rules
}

// resolverPatterns returns the host resolver rule patterns (* and ? only)
// that match the host names MatchDomain(pattern, host) accepts; exact is
// false when they match more (see ResolverRules).
func resolverPatterns(pattern string) (pats []string, exact bool) {
	if a, err := netip.ParseAddr(pattern); err == nil && a.Is4() {
		return []string{a.String(), mappedV6(a)}, true
	}
	if !strings.ContainsAny(pattern, "*?[\\") {
		w := widenUnsafe(pattern)
		return []string{w, "*." + w, w + ".", "*." + w + "."}, w == pattern
	}
	variants := []string{""}
	exact = true
	appendAll := func(alts []string) {
		if len(variants)*len(alts) > maxHostVariants {
			alts, exact = []string{"?"}, false
		}
		next := make([]string, 0, len(variants)*len(alts))
		for _, v := range variants {
			for _, a := range alts {
				next = append(next, v+a)
			}
		}
		variants = next
	}
	// literal is one character of a host name in a pattern.
	literal := func(c byte) string {
		if !ruleSafe(string(c)) {
			exact = false
			return "?"
		}
		return string(c)
	}
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*', '?':
			appendAll([]string{string(c)})
		case '[':
			set, negate, end := globClass(pattern, i)
			i = end
			seen := map[string]bool{}
			var alts []string
			for _, x := range set {
				if l := literal(x); !seen[l] {
					seen[l] = true
					alts = append(alts, l)
				}
			}
			switch {
			case negate:
				alts, exact = []string{"?"}, false
			case len(alts) == 0:
				// Matches no host name: refuses nothing, allows nothing.
				return nil, true
			}
			appendAll(alts)
		case '\\':
			if i+1 < len(pattern) {
				i++
				appendAll([]string{literal(pattern[i])})
			}
		default:
			appendAll([]string{literal(c)})
		}
	}
	for _, v := range variants {
		pats = append(pats, v)
		if !strings.HasSuffix(v, "*") {
			pats = append(pats, v+".")
		}
		exact = exact && portSafe(v)
	}
	if ipv4Glob(pattern) {
		pats = append(pats, "::ffff:*")
	}
	return pats, exact
}

// portSafe reports whether Chrome's second try of a rule pattern, against
// "host:port" when the host alone does not match, can never refuse a host
// the pattern does not match: *1 matches "localhost:18081". A pattern is
// safe when it is * alone, when no wildcard follows its last literal that
// a port cannot hold (a port is digits), or when only a final * does: the
// colon and the port are then either beyond the pattern's reach or taken
// by that * with the host already matched. Exact patterns (no wildcard)
// are always safe.
func portSafe(pattern string) bool {
	if pattern == "*" {
		return true
	}
	last := strings.LastIndexFunc(pattern, func(r rune) bool {
		return r != '*' && r != '?' && (r < '0' || r > '9')
	})
	tail := pattern[last+1:]
	if !strings.ContainsAny(tail, "*?") {
		return true
	}
	return last >= 0 && tail == "*"
}

// ruleSafe reports whether s can stand in a host resolver rule as itself:
// Chrome splits the rules at commas and a rule at white space, and * ? \
// are pattern syntax.
func ruleSafe(s string) bool {
	return !strings.ContainsAny(s, ", \t\r\n\f\v*?\\")
}

// widenUnsafe replaces the characters ruleSafe refuses by ?.
func widenUnsafe(s string) string {
	b := []byte(s)
	for i := range b {
		if !ruleSafe(string(b[i])) {
			b[i] = '?'
		}
	}
	return string(b)
}
