// Package replayenv gives a replay the environment its test ran with: the
// variables a package's tests read (the testing package's log of them,
// package touched) that the run set and a fresh shell of the same user
// would not, each with its value, a secret's never printed.
//
// What the runner itself sets (the run id, the results directory, the
// fault layer's addresses, PWD, PATH, HOME), contested's own variables
// (the replay line carries the seed and the level), the machine's (the
// user, the terminal, the locale, the go command's) and the CI's (CI,
// GITHUB_*, ...) are not part of a replay: they say where it ran, not what
// the test was given.
//
// The testing package logs what a package's test binary read, not what
// each test read: every replay of a package carries what any of its tests
// read. What the log cannot see (package init, TestMain before m.Run, a
// worker process) the caller adds from the variables the package's source
// names (touched.Source).
package replayenv

import (
	"slices"
	"strings"

	"github.com/contested/contested/internal/secret"
)

// Var is one variable of a replay's environment.
type Var struct {
	Name string `json:"name"`
	// Value is the variable's value; empty for a secret, which is never
	// kept (Secret).
	Value string `json:"value,omitempty"`
	// Secret says the value is a secret, or holds one (a DSN's password):
	// a replay takes it from the environment it runs in.
	Secret bool `json:"secret,omitempty"`
}

// Word is the variable as a shell assignment in a replay line:
// NAME=value, quoted when it must be, and NAME="$NAME" for a secret.
func (v Var) Word() string {
	if v.Secret {
		return v.Name + `="$` + v.Name + `"`
	}
	return v.Name + "=" + quote(v.Value)
}

// quote is s as one shell word: as it is when it needs no quoting, else
// in single quotes.
func quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:,=+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// machine are variables of the machine and the session, never of a test.
var machine = []string{"USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "TMPDIR", "TZ", "LANG", "LANGUAGE",
	"HOSTNAME", "DISPLAY", "EDITOR", "VISUAL", "PAGER", "MAIL", "NO_COLOR", "PWD", "OLDPWD", "PATH", "HOME", "SHLVL", "_",
	"GOROOT", "GOPATH", "GOCACHE", "GOMODCACHE", "GOTMPDIR", "GOTOOLCHAIN", "GOENV", "GOPROXY", "GOPRIVATE",
	"GONOPROXY", "GONOSUMDB", "GOSUMDB", "GOINSECURE", "GOWORK", "GOOS", "GOARCH", "GOBIN", "GOCOVERDIR",
	"GODEBUG", "GOMAXPROCS", "GOTRACEBACK", "GOGC", "GOMEMLIMIT", "CGO_ENABLED", "CC", "CXX", "CI"}

// machinePrefixes are families of such variables: the locale, the
// desktop, ssh, the Docker client, testcontainers, contested's own, and
// the CI's.
var machinePrefixes = []string{"LC_", "XDG_", "SSH_", "DOCKER_", "TESTCONTAINERS_", "CONTESTED_",
	"GITHUB_", "RUNNER_", "GITLAB_", "CI_", "BUILDKITE", "JENKINS_"}

// Replayed reports whether a variable a test read belongs in its replay:
// none of the runner's (given), the machine's or the CI's.
func Replayed(name string, given []string) bool {
	if slices.Contains(given, name) || slices.Contains(machine, name) {
		return false
	}
	for _, p := range machinePrefixes {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	return true
}

// Read is the replay's environment out of the variables a package's tests
// read (names, sorted): each that Replayed keeps and lookup finds set (a
// variable unset in the run is unset in the replay too), a secret's value
// left out. A secret is a variable whose name says it holds one, or whose
// value holds a password (secret.ForDigest masks something in it).
func Read(names, given []string, lookup func(string) (string, bool)) []Var {
	var out []Var
	for _, n := range names {
		if !Replayed(n, given) {
			continue
		}
		v, ok := lookup(n)
		if !ok {
			continue
		}
		if secret.NamedSecret(n) || secret.ForDigest(n, v) != v {
			out = append(out, Var{Name: n, Secret: true})
			continue
		}
		out = append(out, Var{Name: n, Value: v})
	}
	return out
}

// Set is the replay environments of a run's packages.
type Set struct {
	// Module is the module's path: a package named by its directory
	// ("./store", ".") is Module's package there.
	Module string `json:"module"`
	// Packages are the variables of each package, by import path.
	Packages map[string][]Var `json:"packages,omitempty"`
}

// Of is the variables of pkg: an import path, or a directory relative to
// the module root as a replay names it ("./store", ".", "./...": none).
func (s *Set) Of(pkg string) []Var {
	if s == nil || len(s.Packages) == 0 {
		return nil
	}
	if v, ok := s.Packages[pkg]; ok {
		return v
	}
	switch {
	case pkg == ".":
		return s.Packages[s.Module]
	case strings.HasPrefix(pkg, "./") && !strings.Contains(pkg, "..."):
		return s.Packages[s.Module+"/"+strings.TrimPrefix(pkg, "./")]
	}
	return nil
}

// Apply is replay with its package's variables in front, each one the
// line does not assign already: "CLIENTS=4 CONTESTED_SEED=7 go test ./store
// -run ...". A line that names no package (no "go test <dir>") is given
// back as it is.
func (s *Set) Apply(replay string) string {
	return Prefix(replay, s.Of(packageOf(replay)))
}

// Prefix is replay with vars in front, each one the line does not assign
// already; no line stays no line.
func Prefix(replay string, vars []Var) string {
	if strings.TrimSpace(replay) == "" {
		return replay
	}
	var words []string
	for _, v := range vars {
		if !assigns(replay, v.Name) {
			words = append(words, v.Word())
		}
	}
	if len(words) == 0 {
		return replay
	}
	return strings.Join(words, " ") + " " + replay
}

// assigns reports whether the assignments before a replay line's command
// set name.
func assigns(replay, name string) bool {
	for _, f := range strings.Fields(replay) {
		k, _, ok := strings.Cut(f, "=")
		if !ok {
			return false // the command: the assignments are over
		}
		if k == name {
			return true
		}
	}
	return false
}

// packageOf is the package a replay line runs: the word after "go test".
func packageOf(replay string) string {
	f := strings.Fields(replay)
	for i := 0; i+2 < len(f); i++ {
		if f[i] == "go" && f[i+1] == "test" {
			return f[i+2]
		}
	}
	return ""
}

// Build are the variables a replay carries that choose what is built, not
// what the test is given: a rerun builds the code at hand with its own.
var Build = []string{"GOFLAGS"}

// Environ is vars as a rerun's environment, NAME=value: a secret's value
// from lookup (this process's environment), left out when it is unset
// there, which missing names. Build variables are left to the rerun's own
// environment: a rerun tests the code at hand, and a run of other code
// (other build flags) is no evidence about it.
func Environ(vars []Var, lookup func(string) (string, bool)) (env, missing []string) {
	for _, v := range vars {
		if slices.Contains(Build, v.Name) {
			continue
		}
		if !v.Secret {
			env = append(env, v.Name+"="+v.Value)
			continue
		}
		if val, ok := lookup(v.Name); ok {
			env = append(env, v.Name+"="+val)
		} else {
			missing = append(missing, v.Name)
		}
	}
	return env, missing
}
