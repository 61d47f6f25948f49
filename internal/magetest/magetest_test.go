package magetest

import (
	"slices"
	"strings"
	"testing"
)

// targets are a magefile's as Targets reads them: validate with -shard,
// programGate under its alias program-gate with -merge.
var targets = map[string]Target{
	"validate":     {Name: "validate", Flags: []string{"shard"}},
	"programgate":  {Name: "programGate", Aliases: []string{"program-gate"}, Flags: []string{"merge"}},
	"program-gate": {Name: "programGate", Aliases: []string{"program-gate"}, Flags: []string{"merge"}},
}

// TestParseCall reads go tool mage lines and the lines that run the
// binary a -compile wrote; what the magefile does not have, and a
// relative -compile path (which mage writes inside magefiles/), are
// refused.
func TestParseCall(t *testing.T) {
	const bin = "bin/contested-mage"
	for _, c := range []struct {
		name, line string
		compiled   []string
		call       string // Call.String(), or the Compiled path after "compile "
		says       string // the one problem, if any
		notFound   bool
	}{
		{name: "go tool mage", line: "go tool mage validate", call: "validate"},
		{name: "an alias and a flag", line: "- run: go tool mage program-gate -merge shards/*", call: "programGate -merge"},
		{name: "compile under $PWD", line: `go tool mage -compile "$PWD/bin/contested-mage"`, call: "compile " + bin},
		{name: "compile under ${PWD}", line: `go tool mage -compile ${PWD}/bin/contested-mage`, call: "compile " + bin},
		{name: "compile to an absolute path", line: "go tool mage -compile /tmp/contested-mage", call: "compile /tmp/contested-mage"},
		{name: "compile to another variable", line: `go tool mage -compile "$RUNNER_TEMP/contested-mage"`, call: "compile $RUNNER_TEMP/contested-mage"},
		{name: "a relative compile", line: "go tool mage -compile ./bin/contested-mage", says: `relative path ./bin/contested-mage lands there; give an absolute one, as "$PWD/bin/contested-mage"`},
		{name: "a bare relative compile", line: "go tool mage -compile contested-mage", says: "lands there"},
		{name: "the binary", line: "./bin/contested-mage validate -shard=${{ matrix.shard }}/3", compiled: []string{bin}, call: "validate -shard"},
		{name: "the binary without ./", line: "bin/contested-mage program-gate -merge shards/*", compiled: []string{bin}, call: "programGate -merge"},
		{name: "the binary under $PWD", line: `"$PWD/bin/contested-mage" validate`, compiled: []string{bin}, call: "validate"},
		{name: "the binary after a separator", line: "cd . && ./bin/contested-mage validate", compiled: []string{bin}, call: "validate"},
		{name: "the binary listing", line: "./bin/contested-mage -l", compiled: []string{bin}, call: ""},
		{name: "the binary's unknown target", line: "./bin/contested-mage validat", compiled: []string{bin}, says: `no target "validat"`},
		{name: "the binary's unknown flag", line: "./bin/contested-mage validate -shards=1/2", compiled: []string{bin}, says: "validate takes no flag -shards"},
		{name: "the binary has no -compile", line: "./bin/contested-mage -compile x validate", compiled: []string{bin}, says: "no flag -compile of its own"},
		{name: "a binary not compiled", line: "./bin/contested-mage validate", notFound: true},
		{name: "another binary", line: "./bin/contested-mage-old validate", compiled: []string{bin}, notFound: true},
		{name: "go tool mage's unknown flag", line: "go tool mage -x validate", says: "no flag -x of its own"},
	} {
		t.Run(c.name, func(t *testing.T) {
			call, problems, found := ParseCall(targets, c.line, c.compiled...)
			if found == c.notFound {
				t.Fatalf("found %v, want %v", found, !c.notFound)
			}
			if c.says != "" {
				if len(problems) != 1 || !strings.Contains(problems[0], c.says) {
					t.Errorf("problems %q, want one saying %q", problems, c.says)
				}
				return
			}
			if len(problems) != 0 {
				t.Errorf("problems %q, want none", problems)
			}
			got := call.String()
			if call.Compiled != "" {
				got = "compile " + call.Compiled
			}
			if got != c.call {
				t.Errorf("call %q, want %q", got, c.call)
			}
		})
	}
}

// TestParseHelp reads a target's flags and aliases from Mage's usage.
func TestParseHelp(t *testing.T) {
	got := parseHelp("programGate", "programGate certifies.\n\nUsage:\n\n\tmage programgate -merge=<string>\n\nAliases: program-gate, pg\n")
	if !slices.Equal(got.Flags, []string{"merge"}) || !slices.Equal(got.Aliases, []string{"program-gate", "pg"}) {
		t.Errorf("parseHelp = %+v", got)
	}
}
