package targets

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/contested/contested/internal/magetest"
	"github.com/contested/contested/internal/tier"
)

// TestEveryTargetsOneLineIsItsHelpsFirstSentence holds each line of `go
// tool mage -l` to the target's full help (`go tool mage -h <target>`):
// Mage takes the line from the first sentence of the target's doc
// comment, so a period inside that sentence ("one mark per run (. passed")
// cuts it where a reader sees half a thought. Every line must be a whole
// sentence (it ends with a period, its brackets and quotes balance), short
// enough to read as one line, and the start of the target's help, so the
// list says what the help goes on to explain.
func TestEveryTargetsOneLineIsItsHelpsFirstSentence(t *testing.T) {
	tier.Full(t, "the magefile compiled")
	mage := magetest.Compile(t, filepath.Join("..", ".."))
	lines := mage.List()
	if len(lines) < 10 {
		t.Fatalf("go tool mage -l lists %d targets, want every target: %v", len(lines), lines)
	}
	for name, line := range lines {
		t.Run(name, func(t *testing.T) {
			for _, p := range sentenceProblems(line) {
				t.Errorf("go tool mage -l says %q: %s", line, p)
			}
			help := strings.Join(strings.Fields(strings.Split(mage.Help(name), "\nUsage:")[0]), " ")
			first, rest, _ := strings.Cut(help, " ")
			if !strings.EqualFold(first, name) {
				t.Errorf("the help of %s starts with %q, not the target's name", name, first)
			}
			if !strings.HasPrefix(rest, line) {
				t.Errorf("the one-line description is not the start of the help:\n  -l: %s\n  -h: %s", line, rest)
			}
		})
	}
}

// maxLine is the longest a one-line description may be: it must still read
// as one line of the list.
const maxLine = 200

// sentenceProblems says what keeps line from being one whole sentence.
func sentenceProblems(line string) []string {
	var out []string
	if !strings.HasSuffix(line, ".") {
		out = append(out, "it does not end with a period")
	}
	if r := []rune(strings.TrimLeft(line, "(")); len(r) == 0 || !unicode.IsLetter(r[0]) {
		out = append(out, "it does not start with a word")
	}
	for _, pair := range []string{"()", "[]", "{}"} {
		if strings.Count(line, pair[:1]) != strings.Count(line, pair[1:]) {
			out = append(out, "its "+pair+" do not balance")
		}
	}
	for _, q := range []string{`"`, "`"} {
		if strings.Count(line, q)%2 != 0 {
			out = append(out, "its "+q+" quotes do not balance")
		}
	}
	if len(line) > maxLine {
		out = append(out, "it is longer than one line of the list")
	}
	return out
}

// TestSentenceProblems: the check above catches each way a description
// was broken (the cut at a parenthesised period, a missing period, a
// runaway sentence) and passes a whole one.
func TestSentenceProblems(t *testing.T) {
	tests := []struct {
		name, line string
		want       int
	}{
		{"whole", "(program-gate) runs the six phases over the records on disk.", 0},
		{"cut inside a parenthesis", "prints the flake history: one mark per run (.", 1},
		{"no period", "runs the degraded-UX stage", 1},
		{"an open quote", `manages the layer: "up starts it.`, 1},
		{"runaway", strings.Repeat("word ", 50) + "end.", 1},
		{"starts with punctuation", ": runs.", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sentenceProblems(tt.line); len(got) != tt.want {
				t.Errorf("sentenceProblems(%q) = %q, want %d problems", tt.line, got, tt.want)
			}
		})
	}
}
