package gate

import (
	"os"
	"strings"
	"testing"
)

// TestWriteSummaryShowsOnlySectionsWithSomethingInThem: each optional part
// of the summary (the stamp's run id, the unfired legs, the unreadable
// files, the classes with zero fired, the missing self-tests) appears when
// it has something to say and not otherwise; a report without classes
// says so.
func TestWriteSummaryShowsOnlySectionsWithSomethingInThem(t *testing.T) {
	tests := []struct {
		name        string
		r           Report
		want, never []string
	}{
		{"nothing to say", Report{Mode: Standalone, Dir: "/r/fault"},
			[]string{"(no classes)", "REFUSED  0 records read"},
			[]string{"stamp run id", "unfired legs", "unreadable files", "records older than the stamp", "classes_with_zero_fired", "self-tests missing"}},
		{"a stamp, a class, self-tests all present", Report{Mode: Paired, Dir: "/r/fault", RunID: "20261129T101500Z-4f2a",
			ByClass: map[string]ClassCount{"store": {Armed: 2, Fired: 2}}, SelfTests: []SelfTest{{Name: "TestA", Present: true}}, Certified: true},
			[]string{"stamp run id: 20261129T101500Z-4f2a", "store  armed     2  fired     2", "CERTIFIED"},
			[]string{"(no classes)", "self-tests missing", "unfired legs"}},
		{"every section", Report{Mode: Paired, Dir: "/r/fault",
			ByClass:              map[string]ClassCount{"pool": {Armed: 1}},
			Unfired:              []Unfired{{Test: "TestP/x", Surface: "s", Class: "pool", Leg: "x", File: "p.json"}},
			Unreadable:           []Unreadable{{File: "bad.json", Reason: "truncated"}},
			Stale:                []string{"old.json"},
			ClassesWithZeroFired: []string{"pool"},
			SelfTests:            []SelfTest{{Name: "TestA", Present: true}, {Name: "TestGone"}}},
			[]string{"unfired legs (1)", "(no replay command recorded)", "unreadable files (1)", "bad.json: truncated",
				"records older than the stamp (1)", "classes_with_zero_fired (not recording classes, named not failed): pool", "self-tests missing: TestGone"},
			[]string{"(no classes)", "TestA,"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := tt.r.WriteSummary(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, b.String())
				}
			}
			for _, n := range tt.never {
				if strings.Contains(b.String(), n) {
					t.Errorf("summary has %q:\n%s", n, b.String())
				}
			}
		})
	}
}

// TestAutoColorOnACharacterDevice: a character device that is not stdout
// (here /dev/null, as a terminal other than stdout would be) gets colour,
// unless NO_COLOR is set or TERM is dumb.
func TestAutoColorOnACharacterDevice(t *testing.T) {
	dev, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no %s here: %v", os.DevNull, err)
	}
	defer dev.Close()
	tests := []struct {
		noColor, term string
		want          bool
	}{
		{"", "xterm-256color", true},
		{"", "", true},
		{"", "dumb", false},
		{"1", "xterm-256color", false},
	}
	for _, tt := range tests {
		t.Setenv("NO_COLOR", tt.noColor)
		t.Setenv("TERM", tt.term)
		if got := autoColor(dev); got != tt.want {
			t.Errorf("autoColor(%s) with NO_COLOR=%q TERM=%q = %v, want %v", os.DevNull, tt.noColor, tt.term, got, tt.want)
		}
	}
}
