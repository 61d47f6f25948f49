package markdown

import (
	"strings"
	"testing"
)

// TestTextIsLiteral: whatever s holds, Text(s) is one line in which no
// HTML, link, image, emphasis, code, math, table cell, heading, list or
// rule can open, and control characters show as Go escapes; punctuation
// Markdown does not act on is left as written, so the raw text reads.
func TestTextIsLiteral(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain words", "stock team", "stock team"},
		{"a script", "<script>x</script>", `\<script\>x\</script\>`},
		{"a javascript: link", "[x](javascript:y)", `\[x\]\(javascript:y\)`},
		{"an image", "![x](y.png)", `\!\[x\]\(y.png\)`},
		{"emphasis, strikethrough, code and math", "*a* _b_ ~~c~~ `d` $e$", "\\*a\\* \\_b\\_ \\~\\~c\\~\\~ \\`d\\` \\$e\\$"},
		{"an entity and an autolink", "&amp; <http://x>", `\&amp; \<http://x\>`},
		{"a heading's closing hashes", "# a #", `\# a \#`},
		{"a list item", "- a", `\- a`},
		{"a rule", "---", `\---`},
		{"a setext underline", "===", `\===`},
		{"another list item", "+ a", `\+ a`},
		{"an ordered list item", "12. a", `12\. a`},
		{"an ordered list item with a parenthesis", "1) a", `1\) a`},
		{"a backslash", `a\b`, `a\\b`},
		{"what Markdown does not act on", "adopter.stock example.com/adopter: 1.5, a-b; c=d? 'e' \"f\" @g %h ^i", "adopter.stock example.com/adopter: 1.5, a-b; c=d? 'e' \"f\" @g %h ^i"},
		{"a pipe that would end a cell", "a | b", `a \| b`},
		{"a carriage return and a newline", "a\r\n# h", `a\\r\\n\# h`},
		{"an escape sequence", "\x1b[2J", `\\x1b\[2J`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestCodeSpansHoldTheirText: a code span's fence outlasts any run of
// backticks inside; it is padded only where CommonMark needs it; in a
// cell its pipes are escaped; it is one line.
func TestCodeSpansHoldTheirText(t *testing.T) {
	tests := []struct{ name, in, code, cell string }{
		{"a name", "TestX/reset", "`TestX/reset`", "`TestX/reset`"},
		{"a backtick inside", "a`b", "``a`b``", "``a`b``"},
		{"a backtick at the edge", "`a", "`` `a ``", "`` `a ``"},
		{"a pipe", "a|b", "`a|b`", "`a\\|b`"},
		{"a newline", "a\nb", "`a\\nb`", "`a\\nb`"},
		{"nothing", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Code(tt.in); got != tt.code {
				t.Errorf("Code(%q) = %q, want %q", tt.in, got, tt.code)
			}
			if got := CellCode(tt.in); got != tt.cell {
				t.Errorf("CellCode(%q) = %q, want %q", tt.in, got, tt.cell)
			}
		})
	}
}

// TestBlockIsNeverEndedByWhatItHolds: a fenced block's fence is longer
// than any run of backticks in it, its lines stay lines, and a carriage
// return shows as an escape.
func TestBlockIsNeverEndedByWhatItHolds(t *testing.T) {
	got := Block("line\r\n```\n<script>\n", 1000)
	if !strings.HasPrefix(got, "````\n") || !strings.HasSuffix(got, "\n````\n") || !strings.Contains(got, "line\\r\n```\n<script>") {
		t.Errorf("Block = %q", got)
	}
	if got := Clip("ab€", 3); got != "ab…" {
		t.Errorf("Clip cut inside a rune: %q", got)
	}
}

// TestListEscapesEachItem: a list's items are each literal text, so one
// item's pipe or markup neither ends a cell nor reaches the next.
func TestListEscapesEachItem(t *testing.T) {
	got := List([]string{"a|b", "*c*", "d"})
	for _, bad := range []string{"a|b", "*c*"} {
		if strings.Contains(got, bad) {
			t.Errorf("List kept %q raw: %q", bad, got)
		}
	}
	if !strings.HasSuffix(got, ", d") || List(nil) != "" {
		t.Errorf("List = %q, List(nil) = %q", got, List(nil))
	}
}

// TestCommandCopiesByteExact: whatever a command holds, Command renders it
// as one code span whose content, read as CommonMark reads a span (the
// fence stripped, then one space from each side when both are spaces), is
// the command byte for byte: no backslash added, nothing clipped, and the
// fence longer than any run of backticks inside.
func TestCommandCopiesByteExact(t *testing.T) {
	long := "CONTESTED_SEED=7 go test ./store -run '^" + strings.Repeat("TestVeryLongName", 60) + "$' -count=1"
	tests := []struct{ name, cmd string }{
		{"a replay", "CONTESTED_SEED=7 go test ./store -run '^TestStock$/^reset$' -count=1"},
		{"a backtick inside", "echo `date` && go test ./..."},
		{"a run of backticks inside", "printf '``' ```x```"},
		{"a backtick at the start", "`go` test"},
		{"a backtick at the end", "go test `x`"},
		{"a pipe", "go test ./... | tee out.txt"},
		{"asterisks and underscores", "go test -run 'Test_a*_b' ./my_pkg/..."},
		{"angle brackets", "go test ./... < /dev/null > out 2>&1"},
		{"a command substitution", "CONTESTED_SEED=$(cat seed) go tool mage validate"},
		{"quotes", `go test -run "^TestX$" -args 'a "b"'`},
		{"a backslash", `go test -run 'a\.b' ./...`},
		{"a command longer than MaxText", long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Command(tt.cmd)
			if strings.Contains(got, "\n") {
				t.Fatalf("Command(%q) = %q: more than one line", tt.cmd, got)
			}
			fence := got[:len(got)-len(strings.TrimLeft(got, "`"))]
			if fence == "" || !strings.HasSuffix(got, fence) || strings.Contains(tt.cmd, fence) {
				t.Fatalf("Command(%q) = %q: its fence %q does not outlast the backticks inside", tt.cmd, got, fence)
			}
			content := got[len(fence) : len(got)-len(fence)]
			if strings.HasPrefix(content, " ") && strings.HasSuffix(content, " ") && strings.Trim(content, " ") != "" {
				content = content[1 : len(content)-1]
			}
			if content != tt.cmd {
				t.Errorf("Command(%q) = %q: a reader copies %q", tt.cmd, got, content)
			}
		})
	}
}

// TestProseShowsTheCommandsItNamesAsCode: a sentence that names a command
// shows each command given as a code span with the bytes as written, and
// the rest of the sentence as escaped text.
func TestProseShowsTheCommandsItNamesAsCode(t *testing.T) {
	replay := "CONTESTED_SEED=7 go test ./my_pkg -run '^TestA$' -count=1"
	arbitrate := "go tool mage arbitrate TestA_b"
	tests := []struct{ name, in, want string }{
		{"a replay inside a sentence", "fix *it*: reproduce with " + replay + "; then file it",
			`fix \*it\*: reproduce with ` + "`" + replay + "`" + `; then file it`},
		{"two commands", "reproduce with " + replay + ", or walk it: " + arbitrate,
			"reproduce with `" + replay + "`, or walk it: `" + arbitrate + "`"},
		{"a command twice", replay + " and " + replay, "`" + replay + "` and `" + replay + "`"},
		{"no command", "a_b", `a\_b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Prose(tt.in, replay, arbitrate); got != tt.want {
				t.Errorf("Prose(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
