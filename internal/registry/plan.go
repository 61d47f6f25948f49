package registry

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Plan is the optional [plan] table: how `go tool mage plan` picks the
// level a change is contested at.
//
//	[plan]
//	lease_paths = ["*lease*", "*lock*", "*fence*"]   # a change to such code is planned at level 2
//	spread = 3                                       # a change reaching this many surfaces is planned at level 3
//
// A pattern without a slash matches any element of a path (a directory or
// the file's name, as in "internal/lease/" or "pglock.go"); one with a
// slash matches the whole path from the module root, "**" standing for
// any number of elements ("internal/**/fence.go"). Each element is matched
// as path.Match matches it.
type Plan struct {
	// LeasePaths are the patterns of lease, fence and lock code.
	LeasePaths []string
	// Spread is how many surfaces a change must reach to be planned at
	// level 3.
	Spread int
	// Line is the line of the [plan] header; 0 when there is none.
	Line int `json:"-"`
}

// DefaultLeasePaths are the lease_paths of a registry that names none:
// any file or directory whose name holds lease, lock or fence.
var DefaultLeasePaths = []string{"*lease*", "*lock*", "*fence*"}

// DefaultSpread is the spread of a registry that names none.
const DefaultSpread = 3

// maxSpread bounds spread: far beyond any real registry.
const maxSpread = 1000

var planKeys = []string{"lease_paths", "spread"}

// DefaultPlan is the [plan] of a registry without one.
func DefaultPlan() Plan {
	return Plan{LeasePaths: append([]string(nil), DefaultLeasePaths...), Spread: DefaultSpread}
}

// LeaseCode reports whether the file (slash-separated, relative to the
// module root) is lease, fence or lock code by p's patterns, and the
// pattern that matched.
func (p Plan) LeaseCode(file string) (string, bool) {
	defaults := slices.Equal(p.LeasePaths, DefaultLeasePaths)
	if defaults {
		// The default patterns look for words: release, clock and block
		// hold them without being lease or lock code.
		file = notLeaseWords.Replace(strings.ToLower(file))
	}
	for _, pat := range p.LeasePaths {
		if MatchPath(pat, file) {
			return pat, true
		}
	}
	return "", false
}

// notLeaseWords removes the words the default patterns would take for
// lease or lock code.
var notLeaseWords = strings.NewReplacer("release", "", "clock", "", "block", "", "flock", "", "unlock", "")

// MatchPath reports whether file matches pattern (see Plan).
func MatchPath(pattern, file string) bool {
	file = strings.Trim(file, "/")
	if !strings.Contains(pattern, "/") {
		for _, e := range strings.Split(file, "/") {
			if ok, _ := path.Match(pattern, e); ok {
				return true
			}
		}
		return false
	}
	return matchElems(strings.Split(strings.Trim(pattern, "/"), "/"), strings.Split(file, "/"))
}

// matchElems matches path elements against pattern elements, "**"
// matching any number of them.
func matchElems(pat, elems []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(elems); i++ {
				if matchElems(pat[1:], elems[i:]) {
					return true
				}
			}
			return false
		}
		if len(elems) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], elems[0]); !ok {
			return false
		}
		pat, elems = pat[1:], elems[1:]
	}
	return len(elems) == 0
}

func (c *checker) plan(root *value) Plan {
	p := DefaultPlan()
	t := c.table(root, "plan", "[plan]")
	if t == nil {
		return p
	}
	p.Line = t.at.line
	c.knownKeys(t, planKeys, "[plan]")
	if t.fields["lease_paths"] != nil {
		pats, at := c.names(t, "lease_paths", "[plan] lease_paths", "pattern")
		var good []string
		for i, pat := range pats {
			if _, err := path.Match(strings.ReplaceAll(pat, "**", "*"), ""); err != nil || strings.HasPrefix(pat, "/") || strings.Contains(pat, "\\") {
				c.errorf(atOr(at, i, t.at), "[plan] lease_paths: %q is not a path pattern; write a name pattern (\"*lease*\") or a path from the module root (\"internal/**/fence.go\"), without a leading slash", pat)
				continue
			}
			good = append(good, pat)
		}
		p.LeasePaths = good
	}
	if v := t.fields["spread"]; v != nil {
		n, err := strconv.ParseInt(v.text, 0, 64)
		if v.kind != unstable.Integer || err != nil || n < 2 || n > maxSpread {
			got := v.describe()
			if v.kind == unstable.Integer {
				got = v.text
			}
			c.errorf(v.valueAt, "[plan] spread must be a whole number from 2 to %d (how many surfaces a change must reach to be planned at level 3), not %s", maxSpread, got)
		} else {
			p.Spread = int(n)
		}
	}
	return p
}
