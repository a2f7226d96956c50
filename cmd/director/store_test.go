package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"director/internal/s3test"
	"director/storage"
)

func TestStoreCheckCommand(t *testing.T) {
	srv := s3test.Start(t)
	home := t.TempDir()
	keys := []string{"--aws-access-key-id", srv.AccessKey, "--aws-secret-access-key", srv.SecretKey}
	tests := []struct {
		name    string
		store   string
		env     map[string]string
		flags   []string
		exit    int
		code    string // error code in --json, "" for success
		hintHas string
	}{
		{"default file store", "", nil, nil, 0, "", ""},
		{"s3 with keys from the environment", srv.StoreURL("cli"), map[string]string{"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey}, nil, 0, "", ""},
		{"s3 with keys from flags", srv.StoreURL("cli"), nil, keys, 0, "", ""},
		{"s3 with a bad secret", srv.StoreURL("cli"), map[string]string{"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": "wrong"}, nil, 1, "storage_unavailable", "AWS_SECRET_ACCESS_KEY"},
		{"s3 with a missing bucket", "s3://nope-bucket?endpoint=" + srv.Endpoint + "&insecure=true", nil, keys, 1, "storage_unavailable", "nope-bucket"},
		{"s3 without keys", srv.StoreURL("cli"), nil, nil, 2, "invalid_input", "AWS_ACCESS_KEY_ID"},
		{"bad store URL", "s3://bucket?endpont=x", nil, keys, 2, "invalid_input", "s3://bucket/prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "DIRECTOR_STORE", "SUPABASE_URL", "SUPABASE_SERVICE_KEY"} {
				t.Setenv(k, tt.env[k])
			}
			args := []string{"director", "--home", home, "--json"}
			if tt.store != "" {
				args = append(args, "--store", tt.store)
			}
			args = append(append(args, tt.flags...), "store", "check")
			var stdout, stderr bytes.Buffer
			exit := run(context.Background(), args, &stdout, &stderr)
			if exit != tt.exit {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", exit, tt.exit, stdout.String(), stderr.String())
			}
			var out struct {
				Status string `json:"status"`
				OK     bool   `json:"ok"`
				Steps  []struct {
					Name string `json:"name"`
					OK   bool   `json:"ok"`
				} `json:"steps"`
				Error struct {
					Code string `json:"code"`
					Hint string `json:"hint"`
				} `json:"error"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
			}
			if tt.code == "" {
				if out.Status != "ok" || !out.OK || len(out.Steps) != 5 {
					t.Errorf("output %+v, want ok with 5 steps", out)
				}
				return
			}
			if out.Status != "error" || out.Error.Code != tt.code || !strings.Contains(out.Error.Hint, tt.hintHas) {
				t.Errorf("output %+v, want code %s with %q in the hint", out, tt.code, tt.hintHas)
			}
			if strings.Contains(stdout.String()+stderr.String(), srv.SecretKey) {
				t.Error("the secret key was printed")
			}
		})
	}
}

func TestStoreCheckText(t *testing.T) {
	t.Setenv("DIRECTOR_STORE", "")
	var stdout, stderr bytes.Buffer
	if exit := run(context.Background(), []string{"director", "--home", t.TempDir(), "store", "check"}, &stdout, &stderr); exit != 0 {
		t.Fatalf("exit %d: %s", exit, stderr.String())
	}
	for _, want := range []string{"store file://", "put", "stat", "list", "get", "delete", "ok: the store works"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}

// --store-call-timeout reaches the store: against a server that accepts
// connections and never answers, a restore fails with storage_unavailable
// after that timeout, well before the 30 s default (the test's own deadline
// is 20 s, which would end it as interrupted instead).
func TestStoreCallTimeoutFlag(t *testing.T) {
	home := cliEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	}()
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"director", "--home", home, "--json", "--store", "s3://snaps?endpoint=" + l.Addr().String() + "&insecure=true",
		"--store-call-timeout", "1s", "profile", "restore", "work", "latest"}, &out, &errb)
	m := decodeJSON(t, out.String())
	e, _ := m["error"].(map[string]any)
	if code != 1 || e["code"] != "storage_unavailable" {
		t.Fatalf("exit %d, %s; want exit 1 and storage_unavailable", code, out.String())
	}
}

// The archive's location that snapshot and restore print is a usable URL:
// the object key joins the store URL's path, before its query.
func TestSnapshotAndRestoreNameTheArchiveLocation(t *testing.T) {
	srv := s3test.Start(t)
	home := cliEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	store := srv.StoreURL("pfx")
	// How the store names itself (storage.Store.String).
	base, query := "s3://"+srv.Bucket+"/pfx", "endpoint="+srv.Endpoint+"&insecure=true"
	d := func(args ...string) (int, string, string) {
		return runDirector(t, append([]string{"--home", home, "--store", store, "--insecure-no-encryption"}, args...)...)
	}
	if code, _, errOut := d("profile", "create", "work"); code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	os.WriteFile(filepath.Join(home, "browser-profiles", "work", "Local State"), []byte(`{}`), 0o600)

	code, out, errOut := d("profile", "snapshot", "work")
	if code != 0 {
		t.Fatalf("snapshot: %d %s", code, errOut)
	}
	want := regexp.MustCompile(`(?m)^  stored   ` + regexp.QuoteMeta(base+"/work/") + `work-[^/?]+\.tar\.zst` + regexp.QuoteMeta("?"+query) + `$`)
	if !want.MatchString(out) {
		t.Errorf("snapshot output:\n%s\nwant a line matching %s", out, want)
	}

	code, out, errOut = d("--json", "profile", "snapshot", "work")
	snap, _ := decodeJSON(t, out)["snapshot"].(map[string]any)
	if code != 0 || snap["location"] != base+"/"+snap["object_key"].(string)+"?"+query {
		t.Errorf("snapshot --json: %d %s %s\nwant location %s/%v?%s", code, out, errOut, base, snap["object_key"], query)
	}

	code, out, errOut = d("--json", "profile", "restore", "work", "latest")
	res, _ := decodeJSON(t, out)["restore"].(map[string]any)
	if loc := base + "/" + snap["object_key"].(string) + "?" + query; code != 0 || res["source"] != loc {
		t.Errorf("restore --json: %d %s %s\nwant source %s", code, out, errOut, loc)
	}
}

// TestStoreCheckLocalCauses: a file:// store whose folder cannot be made is
// diagnosed as the local file system, not as a failing server, and a
// --timeout that leaves no time is invalid input, not a store that did not
// answer.
func TestStoreCheckLocalCauses(t *testing.T) {
	t.Setenv("DIRECTOR_STORE", "")
	home := t.TempDir()
	cases := []struct {
		name      string
		args      []string
		exit      int
		code      string
		msg, hint string
		noMsg     string
	}{
		{"folder cannot be made", []string{"--store", "file:///proc/nope", "store", "check"}, 1, "storage_unavailable",
			"local folder cannot be created, read or written", "/proc/nope", "server errors"},
		{"zero timeout", []string{"store", "check", "--timeout", "0s"}, 2, "invalid_input", "--timeout must be positive", "--timeout 2m", "did not answer"},
		{"negative timeout", []string{"store", "check", "--timeout", "-1s"}, 2, "invalid_input", "--timeout must be positive", "--timeout 2m", "did not answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, _ := runDirector(t, append([]string{"--home", home, "--json"}, c.args...)...)
			m := decodeJSON(t, out)
			e, _ := m["error"].(map[string]any)
			msg, _ := e["message"].(string)
			hint, _ := e["hint"].(string)
			if code != c.exit || e["code"] != c.code || !strings.Contains(msg, c.msg) || !strings.Contains(hint, c.hint) || strings.Contains(msg, c.noMsg) {
				t.Errorf("exit %d, %s; want exit %d, %s, message ~%q without %q, hint ~%q", code, out, c.exit, c.code, c.msg, c.noMsg, c.hint)
			}
		})
	}
}

// TestStoreCheckTextNamesACreatedBucket: the text report says when the
// check created the bucket, and that a typo needs the bucket deleted.
func TestStoreCheckTextNamesACreatedBucket(t *testing.T) {
	var b bytes.Buffer
	printCheck(&b, storage.Report{Store: "supabase://browser-profils", OK: true, CreatedBucket: "browser-profils"})
	if !strings.Contains(b.String(), `bucket "browser-profils" did not exist; the check created it`) || !strings.Contains(b.String(), "ok: the store works") {
		t.Errorf("text report:\n%s", b.String())
	}
}

// TestHomeOfAnyNameHasItsDefaultStore: a --home holding "?", "#" or "%"
// works with the default store (<home>/snapshots); every command failed
// with "bad store URL ...: file:// URLs take no query or fragment", since
// the default store was a file:// URL glued from the home's path. A
// --store file:// URL holding them is still refused.
func TestHomeOfAnyNameHasItsDefaultStore(t *testing.T) {
	for _, name := range []string{"q?x=1", "h#frag", "p%41", "k?token=1"} {
		t.Run(name, func(t *testing.T) {
			cliEnv(t)
			home := filepath.Join(t.TempDir(), name)
			for _, args := range [][]string{
				{"profile", "create", "w"},
				{"profile", "snapshot", "w"},
				{"profile", "list"},
				{"profile", "snapshots", "w"},
				{"profile", "restore", "w", "latest"},
				{"profile", "verify", "w"},
				{"profile", "prune", "w", "--keep-last", "1"},
			} {
				code, out, errOut := runDirector(t, append([]string{"--home", home, "--json"}, args...)...)
				if code != 0 {
					t.Fatalf("%v: exit %d: %s%s", args, code, out, errOut)
				}
			}
			objs, err := os.ReadDir(filepath.Join(home, "snapshots", "w"))
			if err != nil || len(objs) != 2 {
				t.Errorf("objects in %s/snapshots/w: %v, %v; want an archive and its manifest", home, objs, err)
			}
			if strings.ContainsAny(name, "?#") {
				code, _, errOut := runDirector(t, "--home", home, "--store", "file://"+filepath.Join(home, "snapshots"), "profile", "list")
				if code != 2 || !strings.Contains(errOut, "take no query or fragment") {
					t.Errorf("--store file:// with %q: exit %d, %s; want it refused as before", name, code, errOut)
				}
			}
		})
	}
}
