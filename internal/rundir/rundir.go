// Package rundir keeps a results directory to one run's evidence. A run's
// pages (linearizability visualizations, the ladder's reruns, outcomes
// and issue bodies) are written beside the records, and a report links
// what it finds there: a GREEN run must not link the pages or carry the
// issue bodies of the RED run before it. So before a run writes any,
// Rotate moves what the run before left under previous/<its run id>/,
// and keeps the last Keep such directories.
package rundir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Artifacts is the one list of what a run writes under its results
// directory for itself alone: each run's own, never carried into the
// next. The flake history, the shards' timings, the warm layer and the
// reuse certificates are every run's, and are not listed.
var Artifacts = []string{
	Linearizable, // contested/history's visualizations and histories
	LadderDir,    // ladder/<test>.json, .md (issue bodies), reruns/
	BatteryDir,   // battery/go-test.json and junit.xml
	FindingsMD,   // the run's findings, beside validate.json
	FindingsJSON,
}

// Plans are what go tool mage plan writes at the results directory's
// root: a plan is no run's, and a run never moves it aside, because
// validate -plan reads it.
var Plans = []string{PlanMD, PlanJSON}

// Previous is the directory earlier runs' artifacts are moved under.
const Previous = "previous"

// Keep is how many earlier runs' directories Previous keeps.
const Keep = 3

// Rotate moves the artifacts an earlier run left under root into
// previous/<prev>/ (prev is that run's id; "" when unknown, and then the
// time of the move names it), keeps the newest Keep directories of
// previous/ and removes the rest. Nothing outside root is touched, and a
// symbolic link is moved as the link, never followed. It returns what it
// moved, relative to root.
func (d Dir) Rotate(prev string, out io.Writer) ([]string, error) {
	root := string(d)
	r, err := os.OpenRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the results directory: %w", err)
	}
	defer r.Close()
	var present []string
	for _, a := range Artifacts {
		if _, err := r.Lstat(a); err == nil {
			present = append(present, a)
		}
	}
	if len(present) == 0 {
		return nil, nil
	}
	name := safeName(prev)
	if name == "" {
		name = "run-" + time.Now().UTC().Format("20060102T150405Z")
	}
	dest := filepath.Join(Previous, name)
	if _, err := r.Lstat(dest); err == nil {
		dest += "-" + time.Now().UTC().Format("150405.000000000")
	}
	if err := r.MkdirAll(dest, 0o755); err != nil {
		return nil, fmt.Errorf("make %s: %w", dest, err)
	}
	var moved []string
	for _, a := range present {
		if err := r.Rename(a, filepath.Join(dest, a)); err != nil {
			return moved, fmt.Errorf("move %s aside: %w", a, err)
		}
		moved = append(moved, filepath.Join(dest, a))
	}
	if out != nil {
		fmt.Fprintf(out, "results: the run before's pages and issue bodies (%s) moved to %s; the last %d runs' are kept there\n", strings.Join(present, ", "), dest, Keep)
	}
	return moved, prune(r, out)
}

// prune removes all but the newest Keep directories of previous/.
func prune(r *os.Root, out io.Writer) error {
	d, err := r.Open(Previous)
	if err != nil {
		return nil
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	type dir struct {
		name string
		mod  time.Time
	}
	var dirs []dir
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if fi, err := e.Info(); err == nil {
			dirs = append(dirs, dir{e.Name(), fi.ModTime()})
		}
	}
	slices.SortFunc(dirs, func(a, b dir) int { return b.mod.Compare(a.mod) })
	var errs []error
	for _, old := range dirs[min(Keep, len(dirs)):] {
		if err := r.RemoveAll(filepath.Join(Previous, old.name)); err != nil {
			errs = append(errs, err)
		} else if out != nil {
			fmt.Fprintf(out, "results: removed %s (more than %d runs back)\n", filepath.Join(Previous, old.name), Keep)
		}
	}
	return errors.Join(errs...)
}

// safeName is a run id as one path element.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, strings.Trim(s, "."))
}
