// Package session is the engine under `director run` and the agent daemon:
// one live browser bound to one profile (or an incognito temp dir), its tabs
// (handles t1, t2, … mapped to CDP targets), its lifecycle and its limits.
//
// A Session has a daemon-style id (6 characters of [a-z2-7] from
// crypto/rand), a state (created, active, paused, closed), an idle timeout
// and a max duration enforced by timers, and a domain blocklist (plus an
// optional allowlist) that is checked before every action and on every
// request — top-level navigations (redirects, link clicks, scripts and
// popups included), frames and subresources — through the CDP Fetch domain
// enabled on the browser session, and on WebSockets through per-tab network
// rules, so a blocked request is failed before it leaves the browser. A
// blocked top-level navigation ends the session with domain_blocked; a
// blocked frame, subresource or WebSocket is failed and recorded. Under
// those checks, Policy.ResolverRules gives the host resolver rules that the
// launch puts on Chrome's command line: every connection to a refused host
// then fails to resolve, whichever target makes it (a worker's or a
// cross-site frame's WebSocket, which the per-tab rules do not reach). A
// login wall or a CAPTCHA frame pauses the session with human_required.
//
// A new window that a page of the session opens (a target=_blank link,
// window.open) becomes the next tab handle once its first page commits, unless
// the blocklist refused it; a step reaches it by that handle. A page that
// closes itself leaves the tabs, and its handle fails with tab_not_found
// (see popups.go).
//
// Every start, action and end is an Event sent to an AuditSink. Typed text
// and evaluated values are never part of an event; at most their length is.
//
// session imports launcher and errcode only.
package session
