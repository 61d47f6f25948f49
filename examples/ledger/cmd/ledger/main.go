// Command ledger runs the reference ledger service's parts as separate processes: migrate,
// produce, work and status (see package ledger).
//
// The DSN, password included, never needs to be on the command line, where ps and docker
// inspect show it: set LEDGER_DSN, or pass -dsn-file PATH, a file that only its owner may read
// (mode 0600 or stricter) holding the DSN.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/contested/contested/examples/ledger"
)

func main() {
	args, err := dsnFromFile(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "ledger: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := ledger.Main(ctx, args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// dsnFromFile takes -dsn-file PATH (or -dsn-file=PATH, one or two dashes) out of args, reads
// the DSN from that file and hands it to the command through LEDGER_DSN. It refuses a file
// that others may read, an empty one, and -dsn-file given with -dsn.
func dsnFromFile(args []string) ([]string, error) {
	var out []string
	path, found, dsnFlag := "", false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case a == "--" || !strings.HasPrefix(a, "-"):
			out = append(out, a)
			continue
		case name == "dsn":
			dsnFlag = true
		case name == "dsn-file":
			if !hasValue {
				if i+1 == len(args) {
					return nil, errors.New("-dsn-file needs a path")
				}
				i++
				value = args[i]
			}
			path, found = value, true
			continue
		}
		out = append(out, a)
	}
	if !found {
		return args, nil
	}
	if dsnFlag {
		return nil, errors.New("give -dsn or -dsn-file, not both")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("-dsn-file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("-dsn-file %s has mode %v: others may read the password; chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-dsn-file: %w", err)
	}
	dsn := strings.TrimSpace(string(b))
	if dsn == "" {
		return nil, fmt.Errorf("-dsn-file %s is empty", path)
	}
	if err := os.Setenv(ledger.EnvDSN, dsn); err != nil {
		return nil, fmt.Errorf("-dsn-file: %w", err)
	}
	return out, nil
}
