package gate

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const escape = "\x1b["

func verifiedReport(t *testing.T, fx fixture) *Report {
	t.Helper()
	dir := layout(t, fx)
	opts := baseOptions(dir)
	opts.Mode = Standalone
	rep, _ := Verify(t.Context(), opts)
	if rep == nil {
		t.Fatal("no report")
	}
	return rep
}

func TestWriteSummary(t *testing.T) {
	tests := []struct {
		name      string
		fx        fixture
		opts      []SummaryOption
		want      []string // substrings, in order
		wantColor bool
	}{
		{
			name: "certified run",
			fx:   fixture{sets: []string{"good"}, stamp: true},
			want: []string{
				"fault gate (standalone)", "armed / fired per class",
				"lease", "armed     0  fired     0",
				"mq-consumer", "armed     1  fired     1",
				"store", "armed     2  fired     2",
				"classes_with_zero_fired (not recording classes, named not failed): lease",
				"1 records belong to this run", "ok", "2 every record file was read", "3 every armed fault fired",
				"4 faults executed at all", "5 every recording class fired", "6 self-tests exist in the test inventory",
				"CERTIFIED  4 records read, 0 unreadable, 4 armed, 4 fired",
			},
		},
		{
			name: "refused run lists unfired legs with replay, unreadable files and the failing phases",
			fx:   fixture{sets: []string{"good", "unfired", "truncated"}, stamp: true},
			want: []string{
				"unfired legs (1)",
				"TestPoolContract/pool-exhaustion  surface ledger.pool  class pool  leg pool-exhaustion  seed 1234",
				"replay: CONTESTED_SEED=1234 go test ./pool -run '^TestPoolContract$/^pool-exhaustion$' -count=1",
				"unreadable files (1)", "store-reset-truncated.json: parse: field replay: unexpected end of JSON input",
				"2 every record file was read", "REFUSED", "3 every armed fault fired", "REFUSED",
				"REFUSED  5 records read, 1 unreadable, 5 armed, 4 fired",
			},
		},
		{
			name:      "colour only when asked, for a writer that is not a terminal",
			fx:        fixture{sets: []string{"good"}, stamp: true},
			opts:      []SummaryOption{WithColor(true)},
			want:      []string{"CERTIFIED"},
			wantColor: true,
		},
		{
			name: "asked not to colour",
			fx:   fixture{sets: []string{"good"}, stamp: true},
			opts: []SummaryOption{WithColor(false)},
			want: []string{"CERTIFIED"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := verifiedReport(t, tc.fx)
			var buf bytes.Buffer
			if err := rep.WriteSummary(&buf, tc.opts...); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if got := strings.Contains(out, escape); got != tc.wantColor {
				t.Errorf("escape sequences present = %v, want %v:\n%q", got, tc.wantColor, out)
			}
			plain := stripEscapes(out)
			rest := plain
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("summary lacks %q (in order) in:\n%s", w, plain)
				}
				rest = rest[i+len(w):]
			}
			lines := strings.Split(strings.TrimRight(plain, "\n"), "\n")
			last := lines[len(lines)-1]
			if wantFinal := map[bool]string{true: "CERTIFIED", false: "REFUSED"}[rep.Certified]; !strings.HasPrefix(last, wantFinal) {
				t.Errorf("last line %q, want it to start with %s", last, wantFinal)
			}
		})
	}
}

// stripEscapes removes ANSI SGR sequences so colour does not change what the text says.
func stripEscapes(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, escape)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], 'm')
		if j < 0 {
			return b.String()
		}
		s = s[i+j+1:]
	}
}

func TestAutoColor(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	tests := []struct {
		name    string
		w       io.Writer
		noColor string
		want    bool
	}{
		{name: "a buffer never gets escapes", w: &bytes.Buffer{}},
		{name: "a regular file is not a terminal", w: file},
		{name: "NO_COLOR wins for a file", w: file, noColor: "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NO_COLOR", tc.noColor)
			if got := autoColor(tc.w); got != tc.want {
				t.Errorf("autoColor = %v, want %v", got, tc.want)
			}
		})
	}
	rep := verifiedReport(t, fixture{sets: []string{"good"}, stamp: true})
	if err := rep.WriteSummary(file); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(escape)) {
		t.Errorf("summary written to a regular file contains escapes")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteSummaryReportsWriteErrors(t *testing.T) {
	rep := verifiedReport(t, fixture{sets: []string{"good"}, stamp: true})
	if err := rep.WriteSummary(failingWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteSummary to a failing writer: %v", err)
	}
}
