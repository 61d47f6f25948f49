package secret

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

const pw = "Zq7-distinctive"

// TestRedactEveryDSNForm runs every form pgx accepts through the pattern
// redactor, which knows no values.
func TestRedactEveryDSNForm(t *testing.T) {
	tests := []struct {
		name, in, secret string
	}{
		{"url user info", "postgres://app:" + pw + "@127.0.0.1:5432/ledger?sslmode=disable", pw},
		{"postgresql url", "postgresql://app:" + pw + "@h/db", pw},
		{"url with an @ in the password", "postgres://app:p@ss" + pw + "@h/db", "p@ss" + pw},
		{"url with an escaped password", "postgres://app:a%20b" + pw + "@h/db", "a%20b" + pw},
		{"url query parameter", "postgres://h:5432/db?user=app&password=" + pw + "&sslmode=disable", pw},
		{"url query parameter first", "postgres://h/db?password=" + pw, pw},
		{"url sslpassword", "postgres://u@h/db?sslpassword=" + pw + "&x=1", pw},
		{"keyword/value", "host=127.0.0.1 port=5432 user=app password=" + pw + " dbname=ledger", pw},
		{"keyword/value, password last", "host=h user=app password=" + pw, pw},
		{"keyword/value, spaces around =", "host=h password = " + pw + " dbname=x", pw},
		{"keyword/value, single-quoted", "host=h password='a b " + pw + "' dbname=x", "a b " + pw},
		{"keyword/value, quoted with escapes", `host=h password='it\'s ` + pw + `' dbname=x`, `it\'s ` + pw},
		{"keyword/value, unterminated quote", "host=h password='a b " + pw, "a b " + pw},
		{"keyword/value, backslash-escaped space", `host=h password=a\ ` + pw + ` dbname=x`, `a\ ` + pw},
		{"keyword/value inside a Go-quoted message", `CONTESTED_PG_DSN="host=h password=` + pw + `" does not parse`, pw},
		{"PGPASSWORD in an environment listing", "PGPASSWORD=" + pw + "\nHOME=/root", pw},
		{"upper-case key", "PASSWORD=" + pw, pw},
		{"Go %+v of a config", "{Host:h Port:5432 Password:" + pw + " Database:x}", pw},
		{"JSON member", `{"user":"app","password":"` + pw + `"}`, pw},
		{"http url", "http://admin:" + pw + "@127.0.0.1:8474", pw},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Redact(tt.in)
			if strings.Contains(got, tt.secret) || strings.Contains(got, pw) {
				t.Errorf("Redact(%q) = %q: the password is still there", tt.in, got)
			}
			if !strings.Contains(got, Mask) {
				t.Errorf("Redact(%q) = %q: nothing masked", tt.in, got)
			}
		})
	}
}

// TestRedactKeepsTheRest: what is not a password survives, so a message
// still says which host, user and database.
func TestRedactKeepsTheRest(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://app:" + pw + "@127.0.0.1:5432/ledger?sslmode=disable", "postgres://app:xxxxx@127.0.0.1:5432/ledger?sslmode=disable"},
		{"postgres://h/db?user=app&password=" + pw + "&sslmode=disable", "postgres://h/db?user=app&password=xxxxx&sslmode=disable"},
		{"host=h user=app password='a b' dbname=x", "host=h user=app password='xxxxx' dbname=x"},
		{`dsn "host=h password=` + pw + `" refused`, `dsn "host=h password=xxxxx" refused`},
		{"postgres://127.0.0.1:5432/db", "postgres://127.0.0.1:5432/db"},
		{"password authentication failed for user \"app\"", "password authentication failed for user \"app\""},
		{"check (host, port, user, password, database); password: see the README", "check (host, port, user, password, database); password: see the README"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// TestPgxAcceptsTheForms: the forms of the table are DSNs pgx parses, with
// the password this package finds in them.
func TestPgxAcceptsTheForms(t *testing.T) {
	for _, dsn := range []string{
		"postgres://app:" + pw + "@127.0.0.1:5432/ledger",
		"postgres://app@127.0.0.1:5432/ledger?password=" + pw,
		"host=127.0.0.1 user=app password=" + pw + " dbname=ledger",
		"host=127.0.0.1 user=app password='a b " + pw + "' dbname=ledger",
	} {
		cfg, err := pgconn.ParseConfig(dsn)
		if err != nil {
			t.Fatalf("pgx does not parse %q: %v", dsn, err)
		}
		if got := Passwords(dsn); len(got) != 1 || got[0] != cfg.Password {
			t.Errorf("Passwords(%q) = %q, pgx reads %q", dsn, got, cfg.Password)
		}
	}
}

// TestScrubMasksKnownValuesInAnyShape: a registered or environment value is
// masked wherever it appears, also where no pattern would find it (pgx's
// own errors, a log line, a JSON document).
func TestScrubMasksKnownValuesInAnyShape(t *testing.T) {
	t.Setenv("CONTESTED_PG_DSN", "host=127.0.0.1 user=postgres password='q u0te-"+pw+"' dbname=contested")
	t.Setenv("CONTESTED_HISTORY_DSN", "postgres://h:hist-"+pw+"@127.0.0.1/history")
	t.Setenv("PGPASSWORD", "env-"+pw)
	Add("added-" + pw)
	secrets := []string{"q u0te-" + pw, "hist-" + pw, "env-" + pw, "added-" + pw}
	for _, s := range secrets {
		for _, shape := range []string{
			"failed to connect: server said " + s + " is wrong",
			fmt.Sprintf("%q", "the password is "+s),
			"postgres://u:" + strings.ReplaceAll(s, " ", "%20") + "@h/db",
		} {
			if got := ScrubString(shape); strings.Contains(got, s) || strings.Contains(got, pw) {
				t.Errorf("ScrubString(%q) = %q", shape, got)
			}
		}
		doc, _ := json.MarshalIndent(map[string]any{"evidence": "saw " + s, "n": 1, "nested": []string{"x", s + `"<&>`}}, "", "  ")
		got := Scrub(doc)
		if bytes.Contains(got, []byte(pw)) {
			t.Errorf("Scrub(JSON) left the secret: %s", got)
		}
		if !json.Valid(got) {
			t.Errorf("Scrub broke the JSON: %s", got)
		}
	}
}

// TestScrubLeavesShortAndPublishedValuesToThePatterns: the devstack's
// published password is a word the output uses; it is masked in DSN forms
// only.
func TestScrubLeavesShortAndPublishedValuesToThePatterns(t *testing.T) {
	t.Setenv("CONTESTED_PG_DSN", "postgres://postgres:contested@127.0.0.1:5432/contested")
	t.Setenv("PGPASSWORD", "")
	in := "module github.com/contested/contested; dsn postgres://postgres:contested@127.0.0.1:5432/contested"
	want := "module github.com/contested/contested; dsn postgres://postgres:xxxxx@127.0.0.1:5432/contested"
	if got := ScrubString(in); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestScrubJSONMasksAPasswordMember: a member named password is masked
// whatever its value, and the document stays valid.
func TestScrubJSONMasksAPasswordMember(t *testing.T) {
	doc := []byte(`{"dsn": "host=h password=` + pw + `", "password": "short", "n": [1, 2]}`)
	got := Scrub(doc)
	if bytes.Contains(got, []byte(pw)) || bytes.Contains(got, []byte("short")) || !json.Valid(got) {
		t.Errorf("Scrub(%s) = %s", doc, got)
	}
}

// TestWriterCatchesASecretSplitAcrossWrites writes a DSN one byte at a
// time; the line reaches the writer underneath only whole and masked.
func TestWriterCatchesASecretSplitAcrossWrites(t *testing.T) {
	Add("split-" + pw)
	var out bytes.Buffer
	w := NewWriter(&out)
	msg := "connect host=h password=" + pw + " failed\nthen split-" + pw + " again\nno newline: password=" + pw
	for i := range len(msg) {
		if _, err := w.Write([]byte{msg[i]}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), pw[:4]) {
			t.Fatalf("part of the password reached the output before its line ended: %q", out.String())
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), pw) || strings.Count(out.String(), "\n") != 2 || !strings.HasSuffix(out.String(), "password="+Mask) {
		t.Errorf("output %q", out.String())
	}
}

// TestWriterKeepsJSONLinesValid: the battery's event stream is one JSON
// document per line; each stays valid after masking.
func TestWriterKeepsJSONLinesValid(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, o := range []string{"dial postgres://u:" + pw + "@h/db\n", "host=h password='" + pw + "'\n"} {
		line, _ := json.Marshal(map[string]string{"Action": "output", "Output": o})
		w.Write(append(line, '\n'))
	}
	w.Flush()
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !json.Valid([]byte(line)) || strings.Contains(line, pw) {
			t.Errorf("line %q", line)
		}
	}
}

// TestWriterBoundsWhatItHolds: a line longer than maxLine is passed on in
// pieces, a DSN near the cut still masked.
func TestWriterBoundsWhatItHolds(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write(bytes.Repeat([]byte("a "), maxLine/2))
	w.Write([]byte("password=" + pw + " "))
	if out.Len() == 0 {
		t.Fatal("nothing passed on past maxLine")
	}
	w.Flush()
	if strings.Contains(out.String(), pw) {
		t.Error("the password near the cut leaked")
	}
}
