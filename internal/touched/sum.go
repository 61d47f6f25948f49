package touched

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/contested/contested/internal/files"
	"github.com/contested/contested/internal/secret"
)

// Inputs digests records against the tree and environment as they are
// now. It hashes each path at most once, so the records of many packages
// that read one fixture cost one read of it; it keeps nothing beyond its
// own life.
type Inputs struct {
	paths  Paths
	lookup func(string) (string, bool)
	memo   map[string]string
}

// NewInputs digests records of tests that ran under p, reading variables
// through lookup (os.LookupEnv, or the battery's environment).
func NewInputs(p Paths, lookup func(string) (string, bool)) *Inputs {
	return &Inputs{paths: p, lookup: lookup, memo: map[string]string{}}
}

// Sum is the hex SHA-256 of what r names as it is now: each variable's
// value (secret.ForDigest), each opened file's content or directory's
// listing, each stat'ed path's kind, permissions and content. Two runs
// whose records and sums are equal read the same inputs.
func (in *Inputs) Sum(r Record) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "contested/touched@1\n")
	for _, name := range r.Env {
		v, ok := in.lookup(name)
		if !ok {
			fmt.Fprintf(h, "env %q unset\n", name)
			continue
		}
		fmt.Fprintf(h, "env %q %q\n", name, secret.ForDigest(name, v))
	}
	for _, list := range []struct {
		op    string
		names []string
	}{{"open", r.Open}, {"stat", r.Stat}} {
		for _, name := range list.names {
			s, err := in.path(list.op, name)
			if err != nil {
				return "", fmt.Errorf("digest what the tests touched: %w", err)
			}
			fmt.Fprintf(h, "%s %q %s\n", list.op, name, s)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// path is the digest of what a recorded name holds now, through links,
// for what the test did to it (op: open or stat).
func (in *Inputs) path(op, name string) (string, error) {
	if s, ok := in.memo[op+" "+name]; ok {
		return s, nil
	}
	s, err := in.hash(op, name)
	if err != nil {
		return "", err
	}
	in.memo[op+" "+name] = s
	return s, nil
}

// hash is what a test that opened (or stat'ed) name saw: a file's
// content, an opened directory's listing, a stat'ed directory's kind.
func (in *Inputs) hash(op, name string) (string, error) {
	p := in.paths.path(name)
	fi, missing, err := files.Stat(p)
	switch {
	case missing != "":
		return missing, nil
	case errors.Is(err, fs.ErrPermission):
		return "not readable", nil
	case err != nil:
		return "", err
	case fi.IsDir() && op == "stat":
		return fmt.Sprintf("directory %v", fi.Mode().Perm()), nil
	case fi.IsDir():
		return listing(p)
	case !fi.Mode().IsRegular():
		return "special " + fi.Mode().Type().String(), nil
	case !strings.HasPrefix(name, "/") && !strings.HasPrefix(name, "~/"):
		// The module's own file: its content is the repository's, which
		// every reader of the digest can read anyway.
	case secret.SecretFile(p):
		return fmt.Sprintf("a secret's file of %d bytes, mode %v", fi.Size(), fi.Mode().Perm()), nil
	}
	sum, err := files.Sum(p)
	if errors.Is(err, fs.ErrPermission) {
		return "not readable", nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("file %v %s", fi.Mode().Perm(), sum), nil
}

// listing is a directory's digest as a test that lists it sees it: each
// entry's name and kind, through links.
func listing(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrPermission) {
		return "directory, not readable", nil
	}
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, e := range entries {
		kind := "file"
		fi, err := os.Stat(dir + string(os.PathSeparator) + e.Name())
		switch {
		case err != nil:
			kind = "dangling"
		case fi.IsDir():
			kind = "dir"
		case !fi.Mode().IsRegular():
			kind = fi.Mode().Type().String()
		}
		fmt.Fprintf(h, "%q %s\n", e.Name(), kind)
	}
	return "directory " + hex.EncodeToString(h.Sum(nil)), nil
}
