package cisummary

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gotest"
	"github.com/contested/contested/internal/terminal"
)

// maxAnnotations bounds the ::error lines of one run (GitHub shows ten per
// step and fifty per job); the rest are counted in a notice.
const maxAnnotations = 50

// Location is where an annotation points: a file, slash-separated and
// relative to the checkout, and a line. The zero Location points nowhere.
type Location struct {
	File string
	Line int
}

// Locate finds where each failure is, in the module in dir: the
// declaration of its test function (the top-level test of a subtest) in
// its package's test files, else the file:line its failure message names,
// else nowhere. Paths are relative to workspace (the checkout,
// $GITHUB_WORKSPACE) when the file is inside it, else to dir. The result
// has one Location per failure, in order.
func Locate(ctx context.Context, dir, workspace string, failures []ladder.Plain) []Location {
	var pkgs []string
	seen := map[string]bool{}
	mod, _ := contract.ModulePath(dir)
	for _, f := range failures {
		// Only the module's packages: go list refuses the whole list for
		// one that is not.
		if f.Test != "" && !seen[f.Package] && packageDir(dir, mod, f.Package) != "" {
			seen[f.Package] = true
			pkgs = append(pkgs, f.Package)
		}
	}
	decls := map[string]gotest.Declaration{}
	if len(pkgs) > 0 {
		decls, _ = gotest.Declarations(ctx, dir, pkgs...)
	}
	base := dir
	if workspace != "" {
		base = workspace
	}
	out := make([]Location, len(failures))
	for i, f := range failures {
		top, _, _ := strings.Cut(f.Test, "/")
		if d, ok := decls[f.Package+"."+top]; ok && f.Test != "" {
			out[i] = Location{File: relative(base, dir, d.File), Line: d.Line}
			continue
		}
		if file, line, ok := messageLocation(f.FirstLine, dir, packageDir(dir, mod, f.Package)); ok {
			out[i] = Location{File: relative(base, dir, file), Line: line}
		}
	}
	return out
}

// packageDir is the directory of the package pkg of the module mod in
// dir, "" when pkg is not the module's.
func packageDir(dir, mod, pkg string) string {
	if mod == "" {
		return ""
	}
	if pkg == mod {
		return dir
	}
	if rest, ok := strings.CutPrefix(pkg, mod+"/"); ok {
		return filepath.Join(dir, filepath.FromSlash(rest))
	}
	return ""
}

// fileLine is a Go file and a line in a message: "store_test.go:42:",
// "./x.go:12:3:", "examples/ledger/x.go:7".
var fileLine = regexp.MustCompile(`(?:^|[\s(])((?:[\w.\-]+/)*[\w.\-]+\.go):(\d+)`)

// messageLocation is the first file:line in msg that names a file of the
// module: a bare name in the package's directory, a relative path from the
// package's directory or from the module root (where go test ran), or an
// absolute path inside the module.
func messageLocation(msg, dir, pkgDir string) (string, int, bool) {
	for _, m := range fileLine.FindAllStringSubmatch(msg, -1) {
		line, err := strconv.Atoi(m[2])
		if err != nil || line <= 0 {
			continue
		}
		name := filepath.FromSlash(m[1])
		var candidates []string
		if filepath.IsAbs(name) {
			candidates = []string{name}
		} else {
			if pkgDir != "" {
				candidates = append(candidates, filepath.Join(pkgDir, name))
			}
			candidates = append(candidates, filepath.Join(dir, name))
		}
		for _, c := range candidates {
			if inside(dir, c) && regular(c) {
				return c, line, true
			}
		}
	}
	return "", 0, false
}

// inside reports whether path is dir or below it.
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func regular(path string) bool {
	info, err := os.Lstat(path)
	return err == nil && info.Mode().IsRegular()
}

// relative is path relative to base when it is inside it, else to dir,
// slash-separated.
func relative(base, dir, path string) string {
	for _, b := range []string{base, dir} {
		if inside(b, path) {
			if rel, err := filepath.Rel(b, path); err == nil {
				return filepath.ToSlash(rel)
			}
		}
	}
	return filepath.ToSlash(path)
}

// writeAnnotations writes one ::error workflow command per failure, at its
// location, with its owner, action, failure and replay in the message;
// past maxAnnotations, one ::notice says how many more there are. Every
// value is escaped (terminal.Annotation): one line of the message per
// field, a field's own newlines and other control characters shown as Go
// escapes, so nothing from disk ends a property, adds a line or issues a
// command of its own.
func writeAnnotations(w io.Writer, run Run, locs []Location) error {
	bw := bufio.NewWriter(w)
	for i, f := range run.Failures {
		if i == maxAnnotations {
			bw.WriteString(terminal.Annotation("notice", [][2]string{{"title", "contested " + run.Command}},
				fmt.Sprintf("%d more failing tests: see the job summary and validate.json battery_failures", len(run.Failures)-i)))
			break
		}
		var props [][2]string
		if i < len(locs) && locs[i].File != "" {
			props = append(props, [2]string{"file", locs[i].File})
			if locs[i].Line > 0 {
				props = append(props, [2]string{"line", strconv.Itoa(locs[i].Line)})
			}
		}
		props = append(props, [2]string{"title", "contested: " + failureName(f) + ": owner " + f.Owner})
		msg := []string{f.FirstLine, "owner: " + f.Owner, "action: " + f.Action}
		if f.Verdict != "" {
			msg = append(msg, "verdict: "+f.Verdict)
		}
		if f.Replay != "" {
			msg = append(msg, "replay: "+f.Replay)
		}
		for i := range msg {
			msg[i] = terminal.Escape(msg[i])
		}
		bw.WriteString(terminal.Annotation("error", props, strings.Join(msg, "\n")))
	}
	return bw.Flush()
}
