// Package touched records what a test binary touched when it ran (the
// environment variables it read, the files and directories it opened or
// stat'ed) from the log the testing package writes for
// -test.testlogfile, and digests those inputs as they are now, so that a
// result can be reused only while everything its tests read is as it was.
//
// It is the run-time half of a package's inputs, as the go command's own
// test cache has it; package digest is the build-time half. Unlike the go
// command, it hashes every file by content (never by its times), follows
// links, and keeps a secret's value out of every digest: a variable whose
// name says it is a secret counts only as set or unset, a password in a
// connection string is masked, and a file outside the module whose name
// says it holds a secret counts by its size alone.
//
// The log starts inside m.Run, in the test binary alone: Source adds what
// the package's own source names, for what is read at package init, in
// TestMain before m.Run or in a worker process of the test binary. A name
// built at run time and read there, what another program the test starts
// reads, the network, and a server beyond its images are not seen.
package touched

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Record is what one test binary touched, each list sorted, each entry
// once. A path inside the module is relative to its root, slash-separated
// ("testdata/in.json", "fixture.json"); one under the user's home starts
// with "~/"; any other is absolute.
type Record struct {
	Env  []string `json:"env,omitempty"`
	Open []string `json:"open,omitempty"`
	Stat []string `json:"stat,omitempty"`
}

// Empty reports whether the test touched nothing recorded.
func (r Record) Empty() bool { return len(r.Env) == 0 && len(r.Open) == 0 && len(r.Stat) == 0 }

// ErrLog means a test log is not one the testing package wrote: it is
// missing, cut short or too large, and the run it stands for is not
// reusable.
var ErrLog = errors.New("no complete record of what the tests touched")

// header is the first line the testing package writes to its log.
const header = "# test log"

// MaxLog bounds a test log read: a test that touches more than this
// records is not reusable.
const MaxLog = 16 << 20

// Paths says where a test ran and which paths to leave out of its record.
type Paths struct {
	// Root is the module root; Dir the package directory the binary ran
	// in, against which relative names are read.
	Root, Dir string
	// Home is the user's home directory, recorded as "~".
	Home string
	// Ignore are directories whose contents are never inputs: the
	// temporary directory, the results directory, the go command's
	// caches and GOROOT (the Go version stands for it), /proc, /sys and
	// /dev. One that holds the module ignores only what is outside it.
	Ignore []string
	// Covered are files the build-time digest already covers in the parts
	// a package's outcome can depend on (the registry: its global tables
	// and the package's own surfaces' entries), so that an edit elsewhere
	// in them does not run every package that loads them.
	Covered []string
	// Given are the variables the runner itself set for the run (its id,
	// its results directory, the fault layer's addresses): the run's own,
	// never inputs.
	Given []string
}

// Parse reads a test log of a binary that ran in p.Dir into a Record.
func Parse(r io.Reader, p Paths) (Record, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxLog+1))
	if err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrLog, err)
	}
	if len(b) > MaxLog {
		return Record{}, fmt.Errorf("%w: its log is over %d MiB", ErrLog, MaxLog>>20)
	}
	if !bytes.HasPrefix(b, []byte(header+"\n")) {
		return Record{}, fmt.Errorf("%w: the log does not start as the testing package starts one", ErrLog)
	}
	env, open, stat := map[string]bool{}, map[string]bool{}, map[string]bool{}
	pwd := p.Dir
	sc := bufio.NewScanner(bytes.NewReader(b[len(header)+1:]))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		op, name, ok := strings.Cut(sc.Text(), " ")
		if !ok || name == "" {
			continue
		}
		switch op {
		case "getenv":
			if !slices.Contains(p.Given, name) {
				env[name] = true
			}
		case "chdir":
			pwd = name
		case "open", "stat":
			if !filepath.IsAbs(name) {
				name = filepath.Join(pwd, name)
			}
			n, ok := p.name(filepath.Clean(name))
			if !ok {
				continue
			}
			if op == "open" {
				open[n] = true
			} else {
				stat[n] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrLog, err)
	}
	for n := range open {
		delete(stat, n) // opened is the stronger record
	}
	return Record{Env: sorted(env), Open: sorted(open), Stat: sorted(stat)}, nil
}

// ParseFile is Parse of the log file at path.
func ParseFile(path string, p Paths) (Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrLog, err)
	}
	defer f.Close()
	return Parse(f, p)
}

// name is how an absolute path is recorded, or false when it is never an
// input.
func (p Paths) name(abs string) (string, bool) {
	for _, f := range p.Covered {
		if f == abs {
			return "", false
		}
	}
	for _, d := range p.Ignore {
		// An ignored directory holding the module (a temporary directory
		// a module was made in) ignores only what is outside the module.
		if d != "" && within(d, abs) && !(within(d, p.Root) && within(p.Root, abs)) {
			return "", false
		}
	}
	if rel, ok := rel(p.Root, abs); ok {
		return rel, true
	}
	if rel, ok := rel(p.Home, abs); ok && p.Home != "" {
		return "~/" + rel, true
	}
	return abs, true
}

// path is where a recorded name is now.
func (p Paths) path(name string) string {
	switch {
	case strings.HasPrefix(name, "~/"):
		return filepath.Join(p.Home, filepath.FromSlash(name[2:]))
	case filepath.IsAbs(name):
		return name
	}
	return filepath.Join(p.Root, filepath.FromSlash(name))
}

func within(dir, path string) bool {
	_, ok := rel(dir, path)
	return ok
}

func rel(dir, path string) (string, bool) {
	if dir == "" {
		return "", false
	}
	r, err := filepath.Rel(dir, path)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
