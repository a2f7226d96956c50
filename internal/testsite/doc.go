// Package testsite is the local web site every browser test, the benchmark
// and `make demo` drive: an HTTP server on 127.0.0.1 with a login form and
// server-side sessions, a persistent cookie (sid) and a session-only cookie
// (sess), pages that write and read localStorage and IndexedDB, redirects, a
// link to another host, a CAPTCHA page, a slow page and a way to invalidate
// sessions. Nothing in it is a mock of director: it is the "real site" the
// profiles log in to.
//
// Other hosts: the site answers on any Host header, so the same listener
// serves http://localhost:PORT/ (a second domain that needs no setup) and
// http://blocked.test:PORT/ once Chrome gets the flag from ChromeFlags
// (--host-resolver-rules=MAP blocked.test 127.0.0.1, which keeps the port).
//
// Pages and their stable selectors:
//
//	/                   home, h1#title, links to every page
//	/login              form#login: input#username, input#password, button#submit (POST /login; ?next=)
//	/account            p#whoami "Logged in as <user>" with a valid session, else 302 to /login?next=/account
//	/logout             ends the session, clears the cookies
//	/storage?set=V      writes V to localStorage["director"] and IndexedDB director/kv["k"], then reads both
//	/storage            only reads them; #ls and #idb show the values ("(none)" when absent), #ready appears when done
//	/cookies            the cookies the request carried, as JSON in pre#cookies (names and values)
//	/setcookie?name=&value=[&max_age=S]   sets a cookie (no max_age: a session cookie)
//	/redirect?to=URL    302 to URL
//	/links              a#blocked-link to blocked.test, a#localhost-link to localhost, a#newtab-link (target=_blank)
//	/landing            p#host names the Host it was served on
//	/captcha            a .g-recaptcha div with an iframe on /recaptcha/api2/anchor (served locally)
//	/hcaptcha           an iframe whose src contains "hcaptcha"
//	/slow[?ms=N]        answers after the delay (default Options.SlowDelay)
//	/invalidate[?user=U]  kills the server-side sessions of U (all users when empty); prints the count
//	/widgets            input#name, select#color, button#go writing to #out, #later shown after 300 ms, ul#items
//	/popups             a#popup-link (target=_blank) and button#open-popup (window.open) open /popup,
//	                    button#blocked-popup opens blocked.test in a new window; p#note shows messages from popups
//	/popup[?via=V]      h1 "Popup", p#via V, p#opener, button#close-me (tells the opener, then window.close()),
//	                    button#open-nested opens another popup
//	/stale              input#editor: a placeholder the page swaps for a fresh input on its first focus;
//	                    button#rerender: replaced by a copy the first time its layout is read; #clicks counts clicks
package testsite
