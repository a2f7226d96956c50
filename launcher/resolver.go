package launcher

import (
	"net"
	"net/url"
	"strings"
)

const resolverFlag = "--host-resolver-rules="

// resolverRules merges the host resolver rules a caller asks for (first)
// with those of any --host-resolver-rules flags in extra (after them, in
// their order) into the value of one flag, and returns extra without those
// flags. Chrome keeps only the last of repeated flags, so two flags would
// drop one set of rules.
//
// A rule may refuse every name ("MAP * ~NOTFOUND", an allowlist). Chrome
// resolves its proxy's host name through the same rules, so when the caller
// gives rules the proxy hosts Chrome takes from the environment
// (http_proxy, https_proxy, all_proxy, their upper-case forms, and the
// others Chrome reads on Linux) and from --proxy-server / --proxy-pac-url
// in extra are excluded from every rule: the rules must not cut Chrome off
// its proxy. An EXCLUDE rule applies to all MAP rules, so it also exempts
// these hosts from the rules in extra.
func resolverRules(extra, rules []string, getenv func(string) string) ([]string, string) {
	var theirs []string
	var rest []string
	for _, f := range extra {
		if v, ok := strings.CutPrefix(f, resolverFlag); ok {
			if v = strings.TrimSpace(v); v != "" {
				theirs = append(theirs, v)
			}
			continue
		}
		rest = append(rest, f)
	}
	if len(rules) == 0 && len(theirs) == 0 {
		return rest, ""
	}
	all := append([]string(nil), rules...)
	if len(rules) > 0 {
		for _, h := range proxyHosts(rest, getenv) {
			all = append(all, "EXCLUDE "+h)
		}
	}
	all = append(all, theirs...)
	return rest, strings.Join(all, ", ")
}

// proxyEnv returns the environment variables Chrome on Linux takes a
// proxy from when no desktop settings say otherwise (Chromium's
// net/proxy_resolution/proxy_config_service_linux.cc).
func proxyEnv() []string {
	return []string{"all_proxy", "http_proxy", "https_proxy", "ftp_proxy", "socks_proxy", "SOCKS_SERVER", "auto_proxy"}
}

// proxyHosts returns the host names of the proxies (and PAC script
// servers) Chrome may use: from the environment and from --proxy-server and
// --proxy-pac-url in flags. Hosts that cannot appear in a rule are left out.
func proxyHosts(flags []string, getenv func(string) string) []string {
	var values []string
	for _, name := range proxyEnv() {
		values = append(values, getenv(name), getenv(strings.ToUpper(name)))
	}
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--proxy-server="); ok {
			// "[<scheme>=]<uri>[;...]", each uri "[<scheme>://]host[:port]".
			for _, part := range strings.Split(v, ";") {
				if _, uri, ok := strings.Cut(part, "="); ok {
					part = uri
				}
				values = append(values, part)
			}
		}
		if v, ok := strings.CutPrefix(f, "--proxy-pac-url="); ok {
			values = append(values, v)
		}
	}
	seen := map[string]bool{}
	var hosts []string
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			h := proxyHost(strings.TrimSpace(item))
			if h == "" || seen[h] || strings.ContainsAny(h, ", \t*?\\") {
				continue
			}
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// proxyHost is the host of a proxy address: a URL, or host[:port].
func proxyHost(v string) string {
	if v == "" || v == "direct://" {
		return ""
	}
	if !strings.Contains(v, "://") {
		v = "http://" + v
	}
	u, err := url.Parse(v)
	if err != nil {
		return ""
	}
	h := strings.ToLower(u.Hostname())
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}
