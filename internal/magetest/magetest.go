// Package magetest compiles a module's magefile and reads what its targets
// say of themselves (go tool mage -l and -h), for tests that hold a
// document or a CI file to the targets that exist.
package magetest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Magefile is a compiled magefile: the program go tool mage builds and
// runs, so its -l and -h are the ones a user reads.
type Magefile struct {
	tb  testing.TB
	bin string
}

// Compile compiles the magefile of the module in dir with go tool mage
// -compile into a temporary directory of tb.
func Compile(tb testing.TB, dir string) *Magefile {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "mage")
	cmd := exec.Command("go", "tool", "mage", "-compile", bin)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go tool mage -compile in %s: %v\n%s", dir, err, out)
	}
	return &Magefile{tb: tb, bin: bin}
}

// Run runs the magefile with args and returns what it printed; a failure
// fails the test.
func (m *Magefile) Run(args ...string) string {
	m.tb.Helper()
	out, err := exec.Command(m.bin, args...).CombinedOutput()
	if err != nil {
		m.tb.Fatalf("mage %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// targetLine is one target of `mage -l`: two spaces, the name (a * marks
// the default), then its description.
var targetLine = regexp.MustCompile(`^  (\S+?)\*?\s+(.*)$`)

// List maps each target `mage -l` lists to its one-line description.
func (m *Magefile) List() map[string]string {
	m.tb.Helper()
	out := map[string]string{}
	_, targets, _ := strings.Cut(m.Run("-l"), "Targets:\n")
	for _, l := range strings.Split(targets, "\n") {
		if t := targetLine.FindStringSubmatch(l); t != nil {
			out[t[1]] = strings.TrimSpace(t[2])
		}
	}
	return out
}

// Help is a target's full help (`mage -h target`).
func (m *Magefile) Help(target string) string {
	m.tb.Helper()
	return m.Run("-h", target)
}

// Target is what a command line may name: a target, under its name or an
// alias, and the flags it takes.
type Target struct {
	Name    string
	Aliases []string
	Flags   []string
}

// Targets are the magefile's targets by every name a command line may
// give them, lower-cased (Mage matches names without case): the name -l
// lists and each alias -h names, with the flags its usage lists.
func (m *Magefile) Targets() map[string]Target {
	m.tb.Helper()
	out := map[string]Target{}
	for name := range m.List() {
		t := parseHelp(name, m.Help(name))
		out[strings.ToLower(name)] = t
		for _, a := range t.Aliases {
			out[strings.ToLower(a)] = t
		}
	}
	return out
}

var (
	flagName  = regexp.MustCompile(`-(\w[\w-]*)=<`)
	aliasLine = regexp.MustCompile(`(?m)^Aliases: (.*)$`)
)

// parseHelp reads a target's flags (-name=<type>) and aliases from the
// usage Mage appends to its help.
func parseHelp(name, help string) Target {
	t := Target{Name: name}
	_, usage, _ := strings.Cut(help, "\nUsage:")
	for _, f := range flagName.FindAllStringSubmatch(usage, -1) {
		t.Flags = append(t.Flags, f[1])
	}
	if a := aliasLine.FindStringSubmatch(usage); a != nil {
		for _, alias := range strings.Split(a[1], ",") {
			t.Aliases = append(t.Aliases, strings.TrimSpace(alias))
		}
	}
	return t
}

// Call is one go tool mage command line, or one run of the binary its
// -compile wrote, as the magefile reads it: the target it runs (under the
// name -l lists; empty for mage's own -l, -h, -compile) and the flags it
// passes.
type Call struct {
	Target string
	Flags  []string
	// Compiled is where a go tool mage -compile writes the targets'
	// binary, as a command line after it names that binary.
	Compiled string
}

// String is the call as the tests compare it: "programGate -merge".
func (c Call) String() string {
	s := c.Target
	for _, f := range c.Flags {
		s += " -" + f
	}
	return s
}

var (
	mageCall = regexp.MustCompile(`go tool mage\s+(.*)`)
	// shellEnd ends a command inside a line of shell: a comment, a
	// separator, the end of a code span or of a quoted command.
	shellEnd = regexp.MustCompile(`\s#|;|&&|\|\||\||\)|` + "`")
	// mageOwn are mage's own flags, and whether each takes a value.
	mageOwn = map[string]bool{"l": false, "h": false, "v": false, "d": true, "t": true, "f": false, "compile": true, "keep": false, "debug": false, "version": false, "init": false, "clean": false, "gocmd": true, "goos": true, "goarch": true, "ldflags": true, "w": true}
	// binaryOwn are the flags of the binary -compile writes.
	binaryOwn = map[string]bool{"l": false, "h": false, "v": false, "t": true}
	// pwd is the shell's way of naming the working directory at the
	// start of a path.
	pwd = regexp.MustCompile(`^(\$PWD|\$\{PWD\})/`)
)

// ParseCall reads the go tool mage command in line against the magefile's
// targets (Targets): the call it makes, and what in it the magefile does
// not have (an unknown target, a flag the target does not take). compiled
// are the binaries earlier lines compiled (each a Call's Compiled): a line
// that runs one of them is read as go tool mage is. found is false when
// line runs neither. A placeholder (<target>) is taken on trust.
//
// A -compile path must be absolute (as "$PWD/bin/contested-mage" is):
// mage builds inside magefiles/, so a relative path lands there and not
// where the next line looks for it.
func ParseCall(targets map[string]Target, line string, compiled ...string) (call Call, problems []string, found bool) {
	if m := mageCall.FindStringSubmatch(line); m != nil {
		return parseArgs(targets, strings.TrimSpace(m[0]), m[1], mageOwn)
	}
	for _, bin := range compiled {
		run := regexp.MustCompile(`(?:^|[\s;&|(])"?(?:(?:\$PWD|\$\{PWD\}|\.)/)?` + regexp.QuoteMeta(bin) + `"?(?:\s+(.*))?$`)
		if m := run.FindStringSubmatch(line); m != nil {
			return parseArgs(targets, strings.TrimSpace(m[0]), m[1], binaryOwn)
		}
	}
	return Call{}, nil, false
}

// parseArgs reads the arguments rest of the command shown, whose own
// flags are own (each with whether it takes a value).
func parseArgs(targets map[string]Target, shown, rest string, own map[string]bool) (call Call, problems []string, found bool) {
	if loc := shellEnd.FindStringIndex(rest); loc != nil {
		rest = rest[:loc[0]]
	}
	args := strings.Fields(rest)
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		name := strings.TrimLeft(args[0], "-")
		takes, ok := own[name]
		if !ok {
			return Call{}, []string{fmt.Sprintf("%q has no flag %s of its own", shown, args[0])}, true
		}
		args = args[1:]
		var value string
		if takes && len(args) > 0 {
			value, args = args[0], args[1:]
		}
		switch name {
		case "l":
			return Call{}, nil, true // lists: no target runs
		case "compile":
			return compiledTo(shown, value)
		}
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "<") {
		return Call{}, nil, true
	}
	target, ok := targets[strings.ToLower(args[0])]
	if !ok {
		return Call{}, []string{fmt.Sprintf("%q: the magefile has no target %q", shown, args[0])}, true
	}
	call.Target = target.Name
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") || len(a) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !slices.Contains(target.Flags, name) {
			problems = append(problems, fmt.Sprintf("%q: %s takes no flag -%s (it takes %v)", shown, target.Name, name, target.Flags))
			continue
		}
		call.Flags = append(call.Flags, name)
	}
	return call, problems, true
}

// compiledTo is the call of a go tool mage -compile path: the binary it
// names. A path under $PWD is named relative to the working directory, as
// the lines that run it name it.
func compiledTo(shown, path string) (Call, []string, bool) {
	path = strings.Trim(path, `"'`)
	switch {
	case path == "" || strings.HasPrefix(path, "<"):
		return Call{}, nil, true
	case pwd.MatchString(path):
		return Call{Compiled: pwd.ReplaceAllString(path, "")}, nil, true
	case filepath.IsAbs(path) || strings.HasPrefix(path, "$"):
		return Call{Compiled: path}, nil, true
	}
	return Call{}, []string{fmt.Sprintf("%q: mage builds inside magefiles/, so the relative path %s lands there; give an absolute one, as \"$PWD/%s\"", shown, path, filepath.Clean(path))}, true
}
