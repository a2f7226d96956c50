package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"director/catalog"
	"director/errcode"
)

// TestEnvValuesNeverReachTheOutput: a value from ${env.X} (raw, or
// escaped in a URL) reaches none of a run's outputs: the error and hint, the
// --json result (step names, artifacts, messages), the logs, the progress
// events and the audit trail, wherever the workflow uses it.
func TestEnvValuesNeverReachTheOutput(t *testing.T) {
	e := newEnv(t)
	const token = "tok3f9aQ7zX"
	cases := []struct{ name, pre, steps string }{
		{"step name", "", "  - name: \"log in as ${env.TOKEN}\"\n    extract: {selector: \"#missing\", as: x}\n    timeout: 300ms\n"},
		{"screenshot file", "", "  - screenshot: \"shot-${env.TOKEN}.png\"\n"},
		{"navigate url (ok run)", "", "  - navigate: SITE/widgets?t=${env.TOKEN}\n"},
		{"blocked url", "session:\n  blocklist: [BLOCKEDHOSTNAME]\n", "  - navigate: BLOCKED?t=${env.TOKEN}\n"},
		{"encoded in url", "", "  - navigate: \"SITE/widgets?t=${env.SPACED}\"\n  - assert: {url: \"*nomatch*\"}\n    timeout: 300ms\n"},
		{"wait_for url pattern", "", "  - wait_for: {url: \"*${env.TOKEN}*\"}\n    timeout: 300ms\n"},
	}
	env := map[string]string{"TOKEN": token, "SPACED": "s3cr et\"pw"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs, prog bytes.Buffer
			e.runner.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			e.runner.Progress = func(ev ProgressEvent) {
				fmt.Fprintf(&prog, "%s %s %v %v\n", ev.Stage, ev.Detail, ev.Err, func() string {
					if ev.Step != nil {
						return ev.Step.Label()
					}
					return ""
				}())
			}
			pre := strings.ReplaceAll(c.pre, "BLOCKEDHOSTNAME", "blocked.test")
			src := "name: leak\nprofile: null\n" + pre + "steps:\n  - navigate: SITE/\n" + c.steps
			src = strings.ReplaceAll(src, "SITE", e.site.URL)
			src = strings.ReplaceAll(src, "BLOCKED", e.site.On("blocked.test", "/landing"))
			w, err := Parse("leak.yaml", []byte(src), LoadOptions{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			before, _ := e.cat.ListEvents(context.Background(), catalog.EventFilter{Limit: 100000})
			res, err := e.runner.Run(context.Background(), w)
			out, _ := json.Marshal(res)
			errS := ""
			if err != nil {
				errS = err.Error() + " hint: " + errcode.HintOf(err)
			}
			after, _ := e.cat.ListEvents(context.Background(), catalog.EventFilter{Limit: 100000})
			evs, _ := json.Marshal(after[:len(after)-len(before)])
			secrets := []string{token, "s3cr et", "s3cr%20et", "s3cr+et", "et%22pw", `et\"pw`}
			for what, s := range map[string]string{"error": errS, "--json result": string(out), "logs": logs.String(), "progress events": prog.String(), "audit events": string(evs)} {
				for _, sec := range secrets {
					if strings.Contains(s, sec) {
						i := strings.Index(s, sec)
						lo, hi := max(0, i-120), min(len(s), i+60)
						t.Errorf("%s holds %q: ...%s...", what, sec, s[lo:hi])
						break
					}
				}
			}
		})
	}
}

// TestLoadErrorsNeverQuoteEnvValues: a workflow refused at load time
// shows ${env.X}, not its value, where a problem quotes it.
func TestLoadErrorsNeverQuoteEnvValues(t *testing.T) {
	const token = "tok3f9aQ7zX"
	for _, src := range []string{
		"name: l\nprofile: null\nsteps:\n  - press: \"${env.TOKEN}\"\n",
		"name: l\nprofile: null\nsteps:\n  - navigate: \"htps://x.example/?t=${env.TOKEN}\"\n",
		"name: l\nprofile: null\nsession:\n  blocklist: [x.example]\nlogin_check:\n  url: \"https://x.example/?t=${env.TOKEN}\"\n  login_wall_selector: form\nsteps:\n  - navigate: https://y.example/\n",
		"name: l\nprofile: null\nsteps:\n  - click: \"a[data-t=${env.TOKEN}]]\"\n",
	} {
		_, err := Parse("l.yaml", []byte(src), LoadOptions{LookupEnv: func(k string) (string, bool) { return token, k == "TOKEN" }})
		if err == nil {
			t.Errorf("loaded: %s", src)
			continue
		}
		if s := err.Error() + " " + errcode.HintOf(err); strings.Contains(s, token) {
			t.Errorf("the error quotes the value: %s", s)
		}
	}
}
