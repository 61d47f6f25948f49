package registry

import (
	"path"
	"strings"
	"unicode"
)

// outsideModule says why p, a Go package the registry names (a surface's
// package, [cluster] package, [degraded] build), is not one of the
// module's own as the go command takes it in the module root, or "" when
// it is: "." or a "./dir" path that stays inside the module, or an import
// path; with tree, a "/..." suffix is allowed too. Every registry path is
// confined to the module: an absolute path, one that climbs out with "..",
// one that the go command would read as a flag, and one holding spaces,
// backslashes or control characters are refused.
func outsideModule(p string, tree bool) string {
	switch {
	case p == "":
		return "is empty"
	case strings.HasPrefix(p, "-"):
		return "starts with '-', which the go command reads as a flag"
	case strings.HasPrefix(p, "/"):
		return "is an absolute path, outside the module"
	case strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '\\' }) >= 0:
		return "holds a space, a backslash or a control character"
	}
	rest := p
	if tree {
		rest = strings.TrimSuffix(rest, "/...")
		if rest == "." && p == "./..." {
			return ""
		}
	}
	if strings.Contains(rest, "...") {
		return "holds '...', which names more than one package"
	}
	if rest == ".." || strings.HasPrefix(rest, "../") {
		return "climbs out of the module with '..'"
	}
	if rest != "." {
		rel := strings.TrimPrefix(rest, "./")
		if rel == "" || strings.HasPrefix(rel, "/") || path.Clean(rel) != rel || strings.HasPrefix(rel, ".") && !strings.HasPrefix(rest, "./") {
			return "is not a clean path inside the module"
		}
		for _, e := range strings.Split(rel, "/") {
			if e == ".." {
				return "climbs out of the module with '..'"
			}
		}
	}
	return ""
}
