package digest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/contested/contested/internal/files"
)

// hasher hashes files by content, each at most once per Load. It keeps
// nothing between two Loads: a digest never stands on what a file's times
// say.
type hasher struct {
	modCache string
	sums     map[string]string // path → its digest, this Load
}

func newHasher(modCache string) *hasher {
	return &hasher{modCache: modCache, sums: map[string]string{}}
}

// inModCache reports whether path is in the module cache, whose files the
// go command verifies against go.sum and never lets change.
func (h *hasher) inModCache(path string) bool {
	if h.modCache == "" {
		return false
	}
	_, ok := inside(h.modCache, path)
	return ok
}

// local reports whether p's files are read from a directory whose content
// can change under the same module version (the main module, a workspace
// module, a module replaced by a directory, vendor/): those are hashed by
// content. A module in the module cache is named by its version and sum.
func (h *hasher) local(p *listed) bool {
	if p.Standard {
		return false
	}
	if p.Module == nil || p.Module.Main || p.Dir == "" {
		return true
	}
	m := p.Module
	if m.Replace != nil {
		m = m.Replace
	}
	if m.Version == "" || m.Sum == "" {
		return true
	}
	return !h.inModCache(p.Dir)
}

// name is how a file is named in a digest: relative to the module root,
// so that the same tree checked out elsewhere has the same digest.
func (h *hasher) name(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}

// file is the SHA-256 of the content of the file at p, through any links;
// "absent" when nothing is there, and the kind of thing for what is no
// regular file.
func (h *hasher) file(p string) (string, error) {
	if s, ok := h.sums[p]; ok {
		return s, nil
	}
	s, err := hashFile(p)
	if err != nil {
		return "", err
	}
	h.sums[p] = s
	return s, nil
}

func hashFile(p string) (string, error) {
	fi, missing, err := files.Stat(p)
	switch {
	case missing != "":
		return missing, nil
	case err != nil:
		return "", err
	case fi.IsDir():
		return "directory", nil
	case !fi.Mode().IsRegular():
		return "not a regular file: " + fi.Mode().Type().String(), nil
	}
	return files.Sum(p)
}

// path is the digest of whatever is at p, through links: a directory's
// tree, a file's content, or "absent".
func (h *hasher) path(p string) (string, error) {
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		return h.file(p)
	}
	if s, ok := h.sums[p+"/"]; ok {
		return s, nil
	}
	s, err := h.tree(p, nil)
	if err != nil {
		return "", err
	}
	h.sums[p+"/"] = s
	return s, nil
}

// tree is the digest of every entry under dir, followed through links:
// a link to a file counts as that file's content, a link to a directory
// as that directory's tree, so a change behind a link changes the
// digest. above are the real paths of the directories being walked, so a
// link back into one of them is named, not followed forever.
func (h *hasher) tree(dir string, above []string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if slices.Contains(above, real) {
		return "cycle", nil
	}
	above = append(above, real)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	parts := make([]string, 0, 2*len(entries))
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Stat(p) // through a link
		var s string
		switch {
		case errors.Is(err, fs.ErrNotExist):
			s = "dangling link"
		case err != nil:
			return "", err
		case fi.IsDir():
			sub, err := h.tree(p, above)
			if err != nil {
				return "", err
			}
			s = "dir:" + sub
		default:
			if s, err = h.file(p); err != nil {
				return "", err
			}
		}
		parts = append(parts, e.Name(), s)
	}
	return Sum(parts...), nil
}

// include finds a C include directive, in a C file or in a cgo preamble
// (where it sits in a comment).
var include = regexp.MustCompile(`(?m)^[ \t]*(?://[ \t]*|\*?[ \t]*)#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]`)

// systemDirs are include directories of the machine, not of the module:
// the Go version and the C toolchain's version stand for them, as they
// do for the go command.
var systemDirs = []string{"/usr/include", "/usr/local/include", "/usr/lib", "/usr/lib64", "/usr/local/lib"}

// includes is the digest parts of the headers p's C code and cgo preamble
// include from outside p's own files: found beside the including file or
// in an -I directory its cgo flags name, never in a system directory, and
// followed into the headers they include.
func (h *hasher) includes(p *listed) ([]string, error) {
	sources := slices.Concat(p.CgoFiles, p.CFiles, p.CXXFiles, p.HFiles, p.SFiles, p.SwigFiles, p.SwigCXXFiles)
	if len(sources) == 0 {
		return nil, nil
	}
	var dirs []string
	for _, flags := range [][]string{p.CgoCPPFLAGS, p.CgoCFLAGS, p.CgoCXXFLAGS} {
		for i := 0; i < len(flags); i++ {
			f := flags[i]
			switch {
			case f == "-I" || f == "-isystem" || f == "-iquote":
				if i+1 < len(flags) {
					dirs = append(dirs, flags[i+1])
					i++
				}
			case strings.HasPrefix(f, "-I"):
				dirs = append(dirs, f[2:])
			}
		}
	}
	for i, d := range dirs {
		if !filepath.IsAbs(d) {
			dirs[i] = filepath.Join(p.Dir, d)
		}
	}
	dirs = slices.DeleteFunc(dirs, func(d string) bool {
		return slices.ContainsFunc(systemDirs, func(s string) bool { _, ok := inside(s, d); return ok })
	})
	own := map[string]bool{}
	for _, f := range sources {
		own[filepath.Join(p.Dir, f)] = true
	}
	seen := map[string]bool{}
	var parts []string
	var walk func(file string) error
	walk = func(file string) error {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil // hashed, or absent, where it is named
		}
		for _, m := range include.FindAllSubmatch(b, -1) {
			name := string(m[2])
			search := dirs
			if string(m[1]) == `"` {
				search = append([]string{filepath.Dir(file)}, dirs...)
			}
			for _, d := range search {
				cand := filepath.Clean(filepath.Join(d, name))
				if filepath.IsAbs(name) {
					cand = name
				}
				if fi, err := os.Stat(cand); err != nil || fi.IsDir() {
					continue
				}
				if seen[cand] {
					break
				}
				seen[cand] = true
				if !own[cand] {
					s, err := h.file(cand)
					if err != nil {
						return err
					}
					parts = append(parts, "include", h.name(p.Dir, cand), s)
				}
				if err := walk(cand); err != nil {
					return err
				}
				break
			}
		}
		return nil
	}
	for _, f := range sources {
		if err := walk(filepath.Join(p.Dir, f)); err != nil {
			return nil, err
		}
	}
	return parts, nil
}
