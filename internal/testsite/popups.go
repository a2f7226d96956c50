package testsite

import (
	"html"
	"net/http"
)

// popupRoutes adds the pages that open new windows and the page whose
// elements the page itself replaces.
func (s *Site) popupRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/popups", s.popups)
	mux.HandleFunc("/popup", s.popup)
	mux.HandleFunc("/stale", s.stale)
}

func (s *Site) popups(w http.ResponseWriter, r *http.Request) {
	blocked := s.On(BlockedHost, "/landing")
	page(w, 200, "Popups", `<h1>Popups</h1>
<p><a id="popup-link" href="/popup?via=link" target="_blank">open a popup (target=_blank)</a></p>
<p><button id="open-popup" type="button" onclick="window.open('/popup?via=open', '_blank')">open a popup (window.open)</button></p>
<p><button id="blocked-popup" type="button" onclick="window.open(`+html.EscapeString(jsString(blocked))+`, '_blank')">open a popup on `+BlockedHost+`</button></p>
<p id="note"></p>
<script>
window.addEventListener("message", e => { document.getElementById("note").textContent = String(e.data); });
</script>`)
}

func (s *Site) popup(w http.ResponseWriter, r *http.Request) {
	via := r.URL.Query().Get("via")
	page(w, 200, "Popup", `<h1>Popup</h1>
<p id="via">`+html.EscapeString(via)+`</p>
<p id="opener"></p>
<p><button id="close-me" type="button" onclick="if (window.opener) window.opener.postMessage('closed by the popup', '*'); window.close()">close this window</button></p>
<p><button id="open-nested" type="button" onclick="window.open('/popup?via=nested', '_blank')">open another popup</button></p>
<script>
document.getElementById("opener").textContent = window.opener ? "has opener" : "no opener";
</script>`)
}

// staleJS builds the two elements of /stale. #editor is a placeholder the
// page swaps for a fresh input the first time it gets the focus, as rich
// editors do; keys sent to the placeholder after that focus reach nothing.
// #rerender is re-rendered (replaced by a copy) the first time its layout is
// read, so a tool that resolved it, measured it and then uses it finds it
// gone; the copy stays and counts clicks in #clicks.
const staleJS = `<script>
(() => {
  const editor = () => { const i = document.createElement("input"); i.id = "editor"; i.name = "editor"; return i; };
  const placeholder = editor();
  placeholder.addEventListener("focus", () => placeholder.replaceWith(editor()), {once: true});
  document.getElementById("editor-slot").append(placeholder);

  const btn = document.getElementById("rerender");
  const width = Object.getOwnPropertyDescriptor(HTMLElement.prototype, "offsetWidth").get;
  Object.defineProperty(btn, "offsetWidth", {configurable: true, get() {
    const w = width.call(btn);
    delete btn.offsetWidth;
    btn.replaceWith(btn.cloneNode(true));
    return w;
  }});
})();
</script>`

func (s *Site) stale(w http.ResponseWriter, r *http.Request) {
	page(w, 200, "Stale", `<h1>Stale</h1>
<p id="editor-slot"></p>
<p><button id="rerender" type="button" onclick="const c = document.getElementById('clicks'); c.textContent = String(Number(c.textContent) + 1)">click me</button></p>
<p id="clicks">0</p>
`+staleJS)
}

// jsString quotes s as a JavaScript string literal in single quotes.
func jsString(s string) string {
	out := []rune{'\''}
	for _, r := range s {
		switch r {
		case '\'', '\\':
			out = append(out, '\\', r)
		case '<':
			out = append(out, []rune(`\u003c`)...)
		default:
			out = append(out, r)
		}
	}
	return string(append(out, '\''))
}
