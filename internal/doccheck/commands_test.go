package doccheck

import (
	"strings"
	"testing"

	"github.com/contested/contested/internal/magetest"
	"github.com/contested/contested/internal/tier"
)

// commands are the go tool mage command lines a page shows, and those
// that run a binary its go tool mage -compile lines wrote: each line of
// its code blocks, and each code span, that holds one.
func commands(p *page, compiled ...string) []string {
	runs := func(l string) bool {
		if strings.Contains(l, "go tool mage") {
			return true
		}
		for _, c := range compiled {
			if strings.Contains(l, c) {
				return true
			}
		}
		return false
	}
	var out []string
	for _, b := range p.blocks {
		if b.lang == "go" {
			continue
		}
		for _, l := range strings.Split(b.code, "\n") {
			if runs(l) {
				out = append(out, l)
			}
		}
	}
	for _, s := range p.spans {
		if runs(s) {
			out = append(out, s)
		}
	}
	return out
}

// TestEveryCommandShownExists holds every go tool mage command of the
// README and docs/ to the compiled magefile: a target or alias it has,
// and flags that target takes (magetest.ParseCall, as the CI files are
// held). A misspelt target and an unknown flag are refused too.
func TestEveryCommandShownExists(t *testing.T) {
	tier.Full(t, "the magefile compiled")
	targets := magetest.Compile(t, root(t)).Targets()
	n := 0
	for _, p := range manual(t) {
		var compiled []string
		for _, c := range commands(p) {
			if call, _, _ := magetest.ParseCall(targets, c); call.Compiled != "" {
				compiled = append(compiled, call.Compiled)
			}
		}
		for _, c := range commands(p, compiled...) {
			_, problems, found := magetest.ParseCall(targets, c, compiled...)
			if found {
				n++
			}
			for _, pr := range problems {
				t.Errorf("%s: %s", p.path, pr)
			}
		}
	}
	if n < 50 {
		t.Errorf("%d go tool mage commands in the manual; the targets page alone shows more", n)
	}
	for _, bad := range []struct{ cmd, says string }{
		{"go tool mage validat", `no target "validat"`},
		{"go tool mage validate -shards=1/2", "takes no flag -shards"},
		{"go tool mage program-gate -merge shards/1 -keep", "takes no flag -keep"},
		{"go tool mage -x validate", "no flag -x of its own"},
		{"go tool mage -h arbitrat", `no target "arbitrat"`},
		{"go tool mage -compile ./bin/contested-mage", "lands there"},
		{"./bin/contested-mage validat", `no target "validat"`},
		{"./bin/contested-mage validate -shards=1/2", "takes no flag -shards"},
		{"./bin/contested-mage -compile x validate", "no flag -compile of its own"},
	} {
		_, problems, _ := magetest.ParseCall(targets, bad.cmd, "bin/contested-mage")
		if len(problems) != 1 || !strings.Contains(problems[0], bad.says) {
			t.Errorf("%q: problems %q, want one saying %q", bad.cmd, problems, bad.says)
		}
	}
}
