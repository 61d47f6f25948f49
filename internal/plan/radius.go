package plan

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/contested/contested/internal/digest"
	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/registry"
)

// Radius is the blast radius: files touched → packages → surfaces →
// claims, in one paragraph and a table.
type Radius struct {
	Summary string `json:"summary"`
	Files   []File `json:"files"`
	// Packages are the packages the files reach, each with the files that
	// reach it and the surfaces whose tests it declares.
	Packages []PackageReach `json:"packages"`
	// Surfaces are the surfaces reached, each with how.
	Surfaces []SurfaceReach `json:"surfaces"`
	// DocsOnly says every file touched is documentation that reaches no
	// package.
	DocsOnly bool `json:"docs_only,omitempty"`
}

// File is one file touched and what it reaches.
type File struct {
	Path string `json:"path"`
	// Kind is what the file is: go, testdata, registry, module graph,
	// docs or other.
	Kind     string   `json:"kind"`
	Packages []string `json:"packages"`
	// Routes say how the file reaches each of its packages.
	Routes   []Reach  `json:"routes"`
	Surfaces []string `json:"surfaces"`
	// Lease is the [plan] lease_paths pattern the file matches, when it
	// is lease, fence or lock code.
	Lease string `json:"lease_pattern,omitempty"`
}

// PackageReach is one package a change reaches.
type PackageReach struct {
	ImportPath string   `json:"import_path"`
	Files      []string `json:"files"`
	// Routes say how each of the files reaches the package.
	Routes   []Reach  `json:"routes"`
	Surfaces []string `json:"surfaces"`
}

// Reach is one file reaching one package, and the route it took: a
// reviewer told only "it reaches" cannot tell a real dependency from a
// guess.
type Reach struct {
	File    string `json:"file"`
	Package string `json:"package"`
	Route   string `json:"route"`
}

// The routes by which a file reaches a package, strongest first.
const (
	// RouteLinkGraph: the package's test binary is built from the file.
	RouteLinkGraph = "link graph"
	// RouteModuleGraph: the file is go.mod, go.sum or go.work, which every
	// package is built by.
	RouteModuleGraph = "module graph"
	// RouteTestdata: the file is in the package's testdata directory.
	RouteTestdata = "testdata"
	// RouteDirectory: the file is in the package's directory, or in a
	// subdirectory of it that is no package of its own (fixtures,
	// migrations/*.sql).
	RouteDirectory = "package directory"
	// RouteTouched: the package's last certificate recorded its tests
	// opening or statting the file.
	RouteTouched = "touched record"
	// RouteReuseReads: the registry's [reuse] reads says the package
	// reads the file at run time.
	RouteReuseReads = "[reuse] reads"
	// RouteGone: a Go file that is gone, in the package's directory.
	RouteGone = "directory of a gone Go file"
)

// routePhrase says each route in the blast radius's summary.
var routePhrase = map[string]string{
	RouteLinkGraph:   "the link graph of their test binaries (the one the reuse digest uses)",
	RouteModuleGraph: "the module graph",
	RouteTestdata:    "their testdata",
	RouteDirectory:   "the package directory a non-Go file is in",
	RouteTouched:     "what their last certificate recorded their tests reading",
	RouteReuseReads:  "the registry's [reuse] reads",
	RouteGone:        "the directory of a Go file that is gone",
}

// routeOrder is the order routes are said in.
var routeOrder = []string{RouteLinkGraph, RouteModuleGraph, RouteTestdata, RouteDirectory, RouteTouched, RouteReuseReads, RouteGone}

// SurfaceReach is one surface a change reaches, and how.
type SurfaceReach struct {
	ID  string   `json:"id"`
	Why []string `json:"why"`
}

// The kinds of file.
const (
	kindGo       = "go"
	kindTestdata = "testdata"
	kindRegistry = "registry"
	kindGraph    = "module graph"
	kindDocs     = "docs"
	kindOther    = "other"
)

// blastRadius maps the change's files to the packages whose test binaries
// are built from them (the digest's link graph), those packages to the
// surfaces whose tests they declare, and adds the surfaces whose registry
// entry changed. Project-wide, every surface is reached.
func blastRadius(in Input) Radius {
	r := Radius{Files: []File{}, Packages: []PackageReach{}, Surfaces: []SurfaceReach{}}
	pkgSurfaces := map[string][]string{}
	var pkgs []digest.Package
	if in.Digest != nil {
		pkgs = in.Digest.Packages
	}
	for _, p := range pkgs {
		pkgSurfaces[p.ImportPath] = surfacesOf(in.Registry, in.Module, p)
	}
	why := map[string][]string{}
	reach := func(id, because string) {
		if !slices.Contains(why[id], because) {
			why[id] = append(why[id], because)
		}
	}
	if in.Change.Mode == ModeProject {
		for _, s := range in.Registry.Surfaces {
			reach(s.ID, "a project-wide plan covers every surface")
		}
	}
	byPkg := map[string][]string{}
	routesOf := map[string][]Reach{}
	changedEntries := changedSurfaces(in.OldRegistry, in.Registry)
	for _, f := range in.Change.Files {
		file := File{Path: f, Kind: kindOf(f, in.RegistryFile), Packages: []string{}, Routes: []Reach{}, Surfaces: []string{}}
		file.Routes = packagesOf(f, in, pkgs)
		for _, rc := range file.Routes {
			if !slices.Contains(file.Packages, rc.Package) {
				file.Packages = append(file.Packages, rc.Package)
			}
			routesOf[rc.Package] = append(routesOf[rc.Package], rc)
		}
		if pat, ok := in.Registry.Plan.LeaseCode(f); ok && (file.Kind == kindGo || len(file.Packages) > 0) {
			file.Lease = pat
		}
		for _, ip := range file.Packages {
			byPkg[ip] = append(byPkg[ip], f)
			for _, s := range pkgSurfaces[ip] {
				if !slices.Contains(file.Surfaces, s) {
					file.Surfaces = append(file.Surfaces, s)
				}
			}
		}
		if file.Kind == kindRegistry {
			for _, s := range changedEntries {
				if !slices.Contains(file.Surfaces, s) {
					file.Surfaces = append(file.Surfaces, s)
				}
				reach(s, "its registry entry changed")
			}
		}
		r.Files = append(r.Files, file)
	}
	for _, p := range pkgs {
		files := byPkg[p.ImportPath]
		if len(files) == 0 {
			continue
		}
		routes := routesOf[p.ImportPath]
		r.Packages = append(r.Packages, PackageReach{ImportPath: p.ImportPath, Files: files, Routes: routes, Surfaces: orEmpty(pkgSurfaces[p.ImportPath])})
		for _, s := range pkgSurfaces[p.ImportPath] {
			reach(s, fmt.Sprintf("package %s declares its tests and is reached by %s (%s)", p.ImportPath, countList(files, "changed file"), strings.Join(routeNames(routes), ", ")))
		}
	}
	for _, s := range in.Registry.Surfaces {
		if w, ok := why[s.ID]; ok {
			r.Surfaces = append(r.Surfaces, SurfaceReach{ID: s.ID, Why: w})
		}
	}
	r.DocsOnly = in.Change.Mode == ModeChange && len(r.Files) > 0 && !slices.ContainsFunc(r.Files, func(f File) bool {
		return f.Kind != kindDocs || len(f.Packages) > 0
	})
	r.Summary = radiusSummary(in, r)
	return r
}

// surfacesOf are the surfaces whose tests the package declares: a tests
// entry naming one of its top-level tests (or a subtest of one), where the
// surface's package, when it names one, is this package.
func surfacesOf(reg *registry.Registry, module string, p digest.Package) []string {
	var out []string
	for _, t := range p.Tests {
		if s, ok := contract.SurfaceOf(reg, module, p.ImportPath, t); ok && !slices.Contains(out, s.ID) {
			out = append(out, s.ID)
		}
	}
	for _, s := range reg.Surfaces {
		for _, t := range s.Tests {
			top, _, _ := strings.Cut(t, "/")
			if slices.Contains(p.Tests, top) && !slices.Contains(out, s.ID) {
				if _, ok := contract.SurfaceOf(reg, module, p.ImportPath, t); ok {
					out = append(out, s.ID)
				}
			}
		}
	}
	return out
}

// packagesOf are the packages a file reaches, each by every route it
// takes, sorted by package then route: those whose test binary is built
// from it (link graph) or whose testdata holds it; every package for the
// module graph; the package whose directory holds a file that is not Go
// or documentation; those whose last certificate recorded their tests
// touching it; those [reuse] reads says read it at run time; and, for a
// Go file that reaches none of them (one that is gone), the package of
// its directory.
func packagesOf(f string, in Input, pkgs []digest.Package) []Reach {
	var out []Reach
	add := func(ip, route string) {
		rc := Reach{File: f, Package: ip, Route: route}
		if !slices.Contains(out, rc) {
			out = append(out, rc)
		}
	}
	kind := kindOf(f, in.RegistryFile)
	if kind == kindGraph {
		for _, p := range pkgs {
			add(p.ImportPath, RouteModuleGraph)
		}
		return out
	}
	for _, p := range pkgs {
		for _, pf := range p.Files {
			if pf == f {
				add(p.ImportPath, RouteLinkGraph)
				break
			}
			if strings.HasSuffix(pf, "/") && strings.HasPrefix(f, pf) {
				add(p.ImportPath, RouteTestdata)
				break
			}
		}
	}
	if kind != kindGo && kind != kindDocs && kind != kindRegistry {
		if ip, ok := directoryPackage(f, in.Root, pkgs); ok {
			add(ip, RouteDirectory)
		}
	}
	for _, p := range pkgs {
		if touchedBy(in.Certificates, p.ImportPath, f) {
			add(p.ImportPath, RouteTouched)
		}
	}
	for _, rd := range in.Registry.Reuse.Reads {
		for _, rp := range rd.Paths {
			if f != rp && !strings.HasPrefix(f, rp+"/") {
				continue
			}
			for _, p := range pkgs {
				if rd.Matches(relDir(in.Root, p.Dir)) {
					add(p.ImportPath, RouteReuseReads)
				}
			}
		}
	}
	if len(out) == 0 && strings.HasSuffix(f, ".go") {
		dir := path.Dir(f)
		for _, p := range pkgs {
			if relDir(in.Root, p.Dir) == dir {
				add(p.ImportPath, RouteGone)
			}
		}
	}
	slices.SortFunc(out, func(a, b Reach) int {
		if c := strings.Compare(a.Package, b.Package); c != 0 {
			return c
		}
		return slices.Index(routeOrder, a.Route) - slices.Index(routeOrder, b.Route)
	})
	return out
}

// directoryPackage is the package whose directory holds f: the nearest
// directory above it that is a package, so that a file in a subdirectory
// with no Go files (migrations/001.sql, fixtures/) reaches the package
// above it. It stops at a directory with a go.mod of its own (another
// module, which this module's packages are not built from) and at a
// hidden directory (.github), which tests do not read; the root package
// is reached only by files outside every hidden directory.
func directoryPackage(f, root string, pkgs []digest.Package) (string, bool) {
	byDir := map[string]string{}
	for _, p := range pkgs {
		byDir[relDir(root, p.Dir)] = p.ImportPath
	}
	for _, part := range strings.Split(path.Dir(f), "/") {
		if strings.HasPrefix(part, ".") && part != "." {
			return "", false
		}
	}
	for dir := path.Dir(f); ; dir = path.Dir(dir) {
		if ip, ok := byDir[dir]; ok {
			return ip, true
		}
		if dir == "." || dir == "/" {
			return "", false
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dir), "go.mod")); err == nil {
			return "", false
		}
	}
}

// touchedBy reports whether the newest certificate of package ip recorded
// its tests opening or statting f (or a directory that holds it): a file a
// test read last time is an input this time, whatever its name.
func touchedBy(certs *certify.Set, ip, f string) bool {
	c, ok := certs.Latest(certify.KindPackage, ip)
	if !ok || c.Touched == nil {
		return false
	}
	for _, list := range [][]string{c.Touched.Open, c.Touched.Stat} {
		for _, t := range list {
			if t == f || strings.HasPrefix(f, strings.TrimSuffix(t, "/")+"/") {
				return true
			}
		}
	}
	return false
}

// routeNames are the distinct routes of rs, in routeOrder.
func routeNames(rs []Reach) []string {
	var out []string
	for _, route := range routeOrder {
		if slices.ContainsFunc(rs, func(rc Reach) bool { return rc.Route == route }) {
			out = append(out, route)
		}
	}
	return out
}

// relDir is a package directory relative to the module root, slash-
// separated, "." for the root.
func relDir(root, dir string) string {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return dir
	}
	return filepath.ToSlash(rel)
}

// kindOf says what kind of file f is.
func kindOf(f, registryFile string) string {
	base := path.Base(f)
	switch {
	case f == registryFile:
		return kindRegistry
	case base == "go.mod" || base == "go.sum" || base == "go.work" || base == "go.work.sum":
		if path.Dir(f) == "." {
			return kindGraph
		}
		return kindOther
	case strings.Contains("/"+f, "/testdata/"):
		return kindTestdata
	case strings.HasSuffix(f, ".go") || strings.HasSuffix(f, ".s") || strings.HasSuffix(f, ".c") || strings.HasSuffix(f, ".h"):
		return kindGo
	case docs(f):
		return kindDocs
	}
	return kindOther
}

// docs reports whether f is documentation: Markdown and other prose, a
// docs/ tree, a site's configuration, a licence.
func docs(f string) bool {
	base := strings.ToLower(path.Base(f))
	for _, ext := range []string{".md", ".markdown", ".rst", ".txt", ".adoc"} {
		if strings.HasSuffix(base, ext) {
			return true
		}
	}
	return strings.HasPrefix(f, "docs/") || base == "mkdocs.yml" || strings.HasPrefix(base, "license") || strings.HasPrefix(base, "authors")
}

// changedSurfaces are the surfaces whose registry entry (claims included)
// differs between old and cur, or that old lacks. A nil old changes
// nothing (the registry did not change, or its old form is unknown).
func changedSurfaces(old, cur *registry.Registry) []string {
	if old == nil {
		return nil
	}
	var out []string
	for _, s := range cur.Surfaces {
		o, ok := old.Surface(s.ID)
		if !ok || !sameEntry(o, s) {
			out = append(out, s.ID)
		}
	}
	return out
}

// sameEntry compares two surfaces' entries, wherever in the file they are.
func sameEntry(a, b registry.Surface) bool {
	strip := func(s registry.Surface) registry.Surface {
		s.Line = 0
		s.Claims = slices.Clone(s.Claims)
		for i := range s.Claims {
			s.Claims[i].Line = 0
		}
		return s
	}
	x, y := strip(a), strip(b)
	x.Claims, y.Claims = normalClaims(x.Claims), normalClaims(y.Claims)
	return reflect.DeepEqual(x, y)
}

// normalClaims treats a nil and an empty claim list alike.
func normalClaims(cs []registry.Claim) []registry.Claim {
	if len(cs) == 0 {
		return nil
	}
	return cs
}

// radiusSummary is the blast radius in one paragraph.
func radiusSummary(in Input, r Radius) string {
	if in.Change.Mode == ModeProject {
		return fmt.Sprintf("Project-wide: every surface of the registry is in scope (%s), whatever changed.", countList(ids(r.Surfaces), "surface"))
	}
	var b strings.Builder
	if len(r.Files) == 0 {
		fmt.Fprintf(&b, "Nothing changed since %s (%s): no file, no package and no claim is at risk.", short(in.Change.Base), in.Change.BaseWhy)
		return b.String()
	}
	fmt.Fprintf(&b, "The change touches %s since %s (%s).", count(len(r.Files), "file"), short(in.Change.Base), in.Change.BaseWhy)
	if r.DocsOnly {
		if len(r.Files) == 1 {
			b.WriteString(" It is documentation, built into no test binary and read by no test: the change is docs only.")
		} else {
			b.WriteString(" Every one is documentation, and none is built into a test binary or read by a test: the change is docs only.")
		}
		return b.String()
	}
	they := "They reach"
	if len(r.Files) == 1 {
		they = "It reaches"
	}
	if len(r.Packages) > 0 {
		var all []Reach
		for _, p := range r.Packages {
			all = append(all, p.Routes...)
		}
		var phrases []string
		for _, route := range routeNames(all) {
			phrases = append(phrases, routePhrase[route])
		}
		fmt.Fprintf(&b, " %s %s through %s", they, count(len(r.Packages), "package"), andList(phrases))
	} else {
		fmt.Fprintf(&b, " %s no package through the link graph of the test binaries", they)
	}
	if len(r.Surfaces) == 0 {
		b.WriteString(", and no surface: no claim of the registry is at risk.")
	} else {
		var claims int
		for _, s := range r.Surfaces {
			if rs, ok := in.Registry.Surface(s.ID); ok {
				claims += len(rs.Claims)
			}
		}
		fmt.Fprintf(&b, ", and %s (%s), whose %s at risk.", count(len(r.Surfaces), "surface"), strings.Join(ids(r.Surfaces), ", "), countList(make([]string, claims), "claim"))
	}
	var loose []string
	for _, f := range r.Files {
		if len(f.Packages) == 0 && len(f.Surfaces) == 0 {
			loose = append(loose, f.Path)
		}
	}
	if len(loose) > 0 {
		fmt.Fprintf(&b, " %s no package: %s.", reachWord(len(loose)), strings.Join(clip(loose, 5), ", "))
	}
	return b.String()
}

// earlyExit says why the change needs no distributed test plan, or "".
func earlyExit(c Change, r Radius) string {
	if c.Mode != ModeChange {
		return ""
	}
	switch {
	case len(r.Files) == 0:
		return "Nothing changed: there is nothing to plan. Plan against another base with -since REV, or project-wide with -all."
	case r.DocsOnly:
		return "The change is docs only: no claim is at risk and no fault leg needs to run. Check the pages themselves (links, examples) instead."
	case len(r.Surfaces) == 0:
		return "The change reaches no surface: no claim of the registry is at risk. The packages it reaches are tested by their own tests (go test on them); if one of them keeps a promise under faults, register it as a surface."
	}
	return ""
}

// andList joins xs as a sentence does: "a", "a and b", "a, b and c".
func andList(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func reachWord(n int) string {
	if n == 1 {
		return "1 file reaches"
	}
	return fmt.Sprintf("%d files reach", n)
}

func ids(ss []SurfaceReach) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// count is n and noun, the noun plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// countList is count of a list, "1 claim is" / "2 claims are" for a
// sentence that goes on.
func countList(xs []string, noun string) string {
	if noun == "claim" {
		if len(xs) == 1 {
			return "1 claim is"
		}
		return fmt.Sprintf("%d claims are", len(xs))
	}
	return count(len(xs), noun)
}

// clip keeps the first n items and says how many more there are.
func clip(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(slices.Clone(xs[:n]), fmt.Sprintf("and %d more", len(xs)-n))
}

func orEmpty(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
