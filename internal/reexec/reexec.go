// Package reexec lets a test binary run itself again as a helper process,
// for tests that need a second process: one that panics, is killed, or
// races the first for a shared resource.
package reexec

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Env names the helper role a re-executed test binary plays.
const Env = "CONTESTED_REEXEC_ROLE"

// Roles maps a role name to the function the helper process runs; its
// return value is the exit code.
type Roles map[string]func() int

// Main runs the role named in the environment, if any, and exits; it
// returns without doing anything in the test binary's normal run. Call it
// first in TestMain.
func Main(roles Roles) {
	role := os.Getenv(Env)
	if role == "" {
		return
	}
	f, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "reexec: unknown role %q\n", role)
		os.Exit(2)
	}
	os.Exit(f())
}

// Command returns a command that runs the test binary as role, with env
// added to this process's environment. It runs no tests of its own.
func Command(tb testing.TB, role string, env ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), Env+"="+role), env...)
	return cmd
}
