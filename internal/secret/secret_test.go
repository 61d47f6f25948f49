package secret

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contested/contested/internal/envvar"
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

// TestTheIndexFindsWhatAskingEachValueFinds: with enough known values the
// variants a text holds are found through their index; it finds exactly
// what asking each variant finds, wherever in the text a value sits, next
// to another, inside another, or cut off by the text's end.
func TestTheIndexFindsWhatAskingEachValueFinds(t *testing.T) {
	var values []string
	for i := range 200 {
		values = append(values, fmt.Sprintf("%08x-%d-victim", i*2654435761, i))
	}
	values = append(values, "victim", "a longer victim") // one inside another
	vs := variants(values)
	indexed, plain := newKnown(vs), &known{vs: vs}
	if indexed.byPrefix == nil {
		t.Fatalf("%d variants and no index", len(vs))
	}
	v0, v7 := values[0], values[7]
	texts := []struct{ name, text string }{
		{"none", "nothing secret here, only a victim's name: vict"},
		{"at the start", v0 + " failed"},
		{"at the end", "failed: " + v7},
		{"cut off at the end", "failed: " + v7[:len(v7)-1]},
		{"two side by side", v0 + v7},
		{"one inside another", "a longer victim"},
		{"URL-escaped", url.QueryEscape(values[9] + " x")},
		{"in JSON", fmt.Sprintf(`{"evidence": %q}`, values[199])},
		{"shorter than the index", "vic"},
	}
	for _, tt := range texts {
		t.Run(tt.name, func(t *testing.T) {
			want, got := plain.in(tt.text), indexed.in(tt.text)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("in(%q) through the index (-asking each +index):\n%s", tt.text, diff)
			}
			if h, w := indexed.holds([]byte(tt.text)), len(want) > 0; h != w {
				t.Errorf("holds(%q) = %v, want %v", tt.text, h, w)
			}
			if got := scrubText(tt.text, indexed); len(want) > 0 && strings.Contains(got, want[len(want)-1]) {
				t.Errorf("scrubText(%q) = %q: %q left", tt.text, got, want[len(want)-1])
			}
		})
	}
}

// BenchmarkScrubARecord scrubs a fault record's JSON with the known values
// of a process that made one victim and of one that made a thousand, with
// the index and by asking each variant: 1000/1 and 1000/1-each are the
// costs of a thousand over one.
func BenchmarkScrubARecord(b *testing.B) {
	doc, _ := json.MarshalIndent(map[string]any{"test": "TestStoreContract/reset", "evidence": map[string]string{
		"injector": "toxiproxy: reset_peer on proxy contested-leg-20004 (127.0.0.1:20004 -> 127.0.0.1:5432)",
		"victim":   "pgconn: server closed the connection unexpectedly: read tcp 127.0.0.1:51234->127.0.0.1:20004"},
		"schedule": strings.Repeat("window #1 after 12 steps for 40ms; ", 20)}, "", "  ")
	set := func(n int) []string {
		var values []string
		for i := range n {
			values = append(values, fmt.Sprintf("%032x", uint64(i)*2654435761))
		}
		return variants(values)
	}
	one, many := set(1), set(1000)
	per := map[string]float64{}
	for name, k := range map[string]*known{"1": newKnown(one), "1000": newKnown(many), "1000-each": {vs: many}} {
		start := time.Now()
		for range b.N {
			scrub(doc, k)
		}
		per[name] = float64(time.Since(start).Nanoseconds()) / float64(b.N)
	}
	b.ReportMetric(per["1"], "ns/scrub-1")
	b.ReportMetric(per["1000"], "ns/scrub-1000")
	b.ReportMetric(per["1000"]/per["1"], "1000/1")
	b.ReportMetric(per["1000-each"]/per["1"], "1000/1-each")
}

// TestWhenUnsureADSNIsMaskedWhole: what a connection string carries that
// no password field names is still a secret: the value of a key not known
// to be harmless, and the whole string when it is neither a URL nor a
// keyword/value string; harmless values (a host, sslmode) are not. And
// ParseError says what pgx could not parse without any of the string.
func TestWhenUnsureADSNIsMaskedWhole(t *testing.T) {
	tests := []struct {
		name      string
		dsn       string
		secret    string
		notSecret string
	}{
		{"no form at all", "hunter2-is-no-dsn", "hunter2-is-no-dsn", ""},
		{"a URL without its colon", "postgres//u:s3cr3t-v4lue@127.0.0.1/db", "postgres//u:s3cr3t-v4lue@127.0.0.1/db", ""},
		{"a misspelt password key", "host=127.0.0.1 user=u passwd=s3cr3t-v4lue sslmode=disable", "s3cr3t-v4lue", "disable"},
		{"an unknown query parameter", "postgres://u@127.0.0.1/db?pass=s3cr3t-v4lue&sslmode=disable", "s3cr3t-v4lue", "disable"},
		{"an unterminated quote", "host=127.0.0.1 password='s3cr3t-v4lue", "host=127.0.0.1 password='s3cr3t-v4lue", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Passwords(tt.dsn)
			if !slices.Contains(got, tt.secret) {
				t.Errorf("Passwords(%q) = %q, want %q among them", tt.dsn, got, tt.secret)
			}
			if tt.notSecret != "" && slices.Contains(got, tt.notSecret) {
				t.Errorf("Passwords(%q) = %q: %q is no secret", tt.dsn, got, tt.notSecret)
			}
			t.Setenv(envvar.HistoryDSN, tt.dsn)
			if out := ScrubString("history: " + tt.dsn + " refused"); strings.Contains(out, "s3cr3t") || strings.Contains(out, "hunter2") {
				t.Errorf("scrubbed: %s", out)
			}
			if _, err := pgconn.ParseConfig(tt.dsn); err != nil {
				if msg := ParseError(err); strings.Contains(msg, "s3cr3t") || strings.Contains(msg, "hunter2") {
					t.Errorf("ParseError echoes the DSN: %s", msg)
				}
			}
		})
	}
}

// TestNoSecretEntersADigest: what of a variable may enter a digest keeps a
// connection string's host and database and never its password, and of a
// variable named as a secret only that it is set.
func TestNoSecretEntersADigest(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"CONTESTED_PG_DSN", "postgres://u:hunter2-long@db:5432/app", "postgres://u:" + Mask + "@db:5432/app"},
		{"DATABASE_URL", "host=db password=hunter2-long dbname=app", "host=db password=" + Mask + " dbname=app"},
		{"GITHUB_TOKEN", "ghp_abcdefghijklmnop", "set"},
		{"AWS_SECRET_ACCESS_KEY", "abc/def", "set"},
		{"CLIENTS", "4", "4"},
	}
	for _, tt := range tests {
		if got := ForDigest(tt.name, tt.value); got != tt.want {
			t.Errorf("ForDigest(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
