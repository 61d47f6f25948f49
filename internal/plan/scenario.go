package plan

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/pitfall"
	"github.com/contested/contested/internal/registry"
)

// scenarios makes one scenario for each gap a lever of contested can
// close, in claim order. The gaps of one claim that one lever closes
// with a new test make one scenario (of the worst of their kinds): for
// no test and no fault variant, a test under the first lever of the
// pitfall the surface can arm; for an oracle too weak, the forcing leg
// with the pitfall's model and checker. The smoke-only gaps one leg of a
// surface leaves make one scenario across its claims: its existing test,
// run over the hardening budget. A gap no lever can close has no
// scenario: the plan lists it under residual uncertainty.
func scenarios(in Input, p *Plan) []Scenario {
	type key struct{ group, lever string }
	var order []key
	closes := map[key][]int{}
	worst := map[key]string{}
	for i, row := range p.Coverage {
		if row.Gap == GapNone {
			continue
		}
		c, _ := p.Claim(row.Claim)
		h, _ := p.Hypothesis(row.Hypothesis)
		pf, _ := pitfall.Lookup(h.Pitfall)
		lever := propose(row, c, pf)
		if lever == "" {
			continue
		}
		k := key{row.Claim, lever}
		if row.Gap == GapSmokeOnly {
			k.group = "smoke " + c.Surface
		}
		if _, ok := closes[k]; !ok {
			order = append(order, k)
			worst[k] = row.Gap
		}
		if gapRank[row.Gap] < gapRank[worst[k]] {
			worst[k] = row.Gap
		}
		closes[k] = append(closes[k], i)
	}
	out := []Scenario{}
	names := map[string]bool{}
	for _, k := range order {
		rows := closes[k]
		c, _ := p.Claim(p.Coverage[rows[0]].Claim)
		s, _ := in.Registry.Surface(c.Surface)
		var hs []Hypothesis
		var falsifies []string
		for _, i := range rows {
			h, _ := p.Hypothesis(p.Coverage[i].Hypothesis)
			hs = append(hs, h)
			if !slices.Contains(falsifies, h.Claim) {
				falsifies = append(falsifies, h.Claim)
			}
		}
		sc := scenario(in, p, c, s, hs, k.lever, worst[k])
		sc.Falsifies = falsifies
		if sc.Existing != "" {
			sc.Name = hardenedName(c.Surface, falsifies, k.lever)
		}
		sc.ID = fmt.Sprintf("S%d", len(out)+1)
		for names[sc.Name] {
			sc.Name += "_" + strings.ToLower(sc.ID)
			if sc.Existing == "" {
				sc.Test += sc.ID
			}
		}
		names[sc.Name] = true
		for _, i := range rows {
			p.Coverage[i].Scenario = sc.ID
		}
		out = append(out, sc)
	}
	return out
}

// propose is the lever that closes a gap: the leg that forces the
// hypothesis already (oracle too weak, smoke only), or the first lever of
// the pitfall a leg of the surface's kind can arm; "" when none can.
func propose(row Row, c ClaimAtRisk, p pitfall.Pitfall) string {
	if row.Gap == GapOracleWeak || row.Gap == GapSmokeOnly {
		if len(row.Legs) > 0 {
			return row.Legs[0]
		}
		return ""
	}
	for _, name := range p.Levers {
		if l, ok := levers.Lookup(name); ok && (!l.Cluster() || c.Class == "cluster") {
			return name
		}
	}
	return ""
}

// scenario fills one scenario in.
func scenario(in Input, p *Plan, c ClaimAtRisk, s registry.Surface, hs []Hypothesis, lever, gap string) Scenario {
	first, _ := pitfall.Lookup(hs[0].Pitfall)
	l, _ := levers.Lookup(lever)
	sc := Scenario{Falsifies: []string{c.Key}, Gap: gap, Surface: c.Surface, Lever: lever, Ambiguity: first.Ambiguity, Budget: budget(s.Budget)}
	for _, h := range hs {
		sc.Closes = append(sc.Closes, h.ID)
	}
	sc.Name = scenarioName(c, lever)
	sc.Test = "Test" + camel(sc.Name)
	doc := l.Doc()
	sc.Landing = fmt.Sprintf("injector: %s; victim: %s; the leg records fired only when both are seen", plainDoc(doc.Injector), plainDoc(doc.Victim))
	sc.Faults = fmt.Sprintf("%s: %s, on the steps its schedule draws from the seed at level %d", lever, l.Meaning(), p.Level.Level)
	switch gap {
	case GapSmokeOnly:
		sc.Workload = fmt.Sprintf("the workload of %s as it is", strings.Join(c.Tests, ", "))
		sc.Oracle = Oracle{Checker: s.Oracle}
		sc.Existing = c.Tests[0]
	case GapOracleWeak:
		sc.Workload = fmt.Sprintf("the workload of %s, each operation recorded in the leg's history (leg.History, or Client.Invoke and Client.Record) so a checker can read it", strings.Join(c.Tests, ", "))
		sc.Oracle = oracleOf(hs)
	default:
		sc.Workload = first.Workload
		sc.Faults += "; " + first.How
		sc.Oracle = oracleOf(hs)
	}
	dir, pkgName := surfaceDir(in, s)
	sc.Package = pkgName
	if sc.Existing != "" {
		sc.Target = testFile(in.Root, dir, sc.Existing)
		sc.Test = sc.Existing
	} else {
		sc.Target = path.Join(dir, "plan_"+slug(c.Surface, 40)+"_"+strings.ToLower(c.ID)+"_"+slug(lever, 30)+"_test.go")
		if dir == "." {
			sc.Target = strings.TrimPrefix(sc.Target, "./")
		}
	}
	sc.Run = fmt.Sprintf("CONTESTED_LEVEL=%d go tool mage contested %s", p.Level.Level, c.Surface)
	return sc
}

// oracleOf is the model and checker of a scenario's hypotheses: the first
// model the first of them names (a property when it names none), and every
// distinct checker.
func oracleOf(hs []Hypothesis) Oracle {
	var o Oracle
	var checkers []string
	for _, h := range hs {
		if o.Model == "" && len(h.Models) > 0 {
			o.Model = h.Models[0]
		}
		if !slices.Contains(checkers, h.Checker) {
			checkers = append(checkers, h.Checker)
		}
	}
	o.Checker = strings.Join(checkers, "; and ")
	return o
}

// budget is a surface's budget as a scenario states it.
func budget(b registry.Budget) Budget {
	out := Budget{Smoke: tierText(b.Smoke), Hardening: tierText(b.Hardening), Release: tierText(b.Release), HardeningSeeds: b.Hardening.Seeds}
	if !b.Release.Provided() {
		out.ReleaseNotProvided, out.RevisitWhen = b.Release.NotProvided, b.Release.RevisitWhen
		out.Release = fmt.Sprintf("not provided: %s. Revisit when: %s.", strings.TrimRight(b.Release.NotProvided, "."), strings.TrimRight(b.Release.RevisitWhen, "."))
	}
	return out
}

// tierText says one budget tier in words: "3 seeds, 3 faults, 30s".
func tierText(t registry.Tier) string {
	var parts []string
	if t.Seeds > 0 {
		parts = append(parts, count(t.Seeds, "seed"))
	}
	if t.Faults > 0 {
		parts = append(parts, count(t.Faults, "fault"))
	}
	if t.Duration > 0 {
		parts = append(parts, t.Duration.String())
	}
	return strings.Join(parts, ", ")
}

// scenarioName names a scenario after the claim it tries to falsify:
// its category, the words of its text and the lever.
func scenarioName(c ClaimAtRisk, lever string) string {
	return string(c.Category) + "_" + words(c.Text, 6) + "_under_" + strings.ReplaceAll(lever, "-", "_")
}

// hardenedName names a scenario that runs an existing leg over the
// hardening budget after the claims it tries to falsify: the surface,
// their ids and the lever.
func hardenedName(surface string, claims []string, lever string) string {
	var ids []string
	for _, k := range claims {
		_, id, _ := strings.Cut(k, "/")
		ids = append(ids, strings.ToLower(id))
	}
	return slug(surface, 40) + "_" + strings.Join(ids, "_") + "_under_" + strings.ReplaceAll(lever, "-", "_") + "_at_hardening"
}

// stop are the words a scenario's name leaves out.
var stop = map[string]bool{"a": true, "an": true, "the": true, "is": true, "are": true, "be": true, "to": true, "of": true,
	"its": true, "it": true, "and": true, "or": true, "that": true, "this": true, "by": true, "for": true, "with": true,
	"on": true, "in": true, "as": true, "whatever": true, "however": true, "every": true, "each": true, "when": true}

// words are the first n words of s that say something, lower case,
// joined by "_", letters and digits only.
func words(s string, n int) string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))) }) {
		if stop[w] {
			continue
		}
		out = append(out, w)
		if len(out) == n {
			break
		}
	}
	if len(out) == 0 {
		return "claim"
	}
	return strings.Join(out, "_")
}

// camel turns a_snake_name into ASnakeName.
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// slug keeps letters and digits of s, the rest as "_", at most n bytes.
func slug(s string, n int) string {
	out := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "_"), "_")
	if len(out) > n {
		out = strings.TrimRight(out[:n], "_")
	}
	if out == "" {
		return "x"
	}
	return out
}

// plainDoc drops the Markdown of a lever's documentation row, for text
// that is not Markdown.
func plainDoc(s string) string {
	return strings.NewReplacer("**", "", "`", "").Replace(s)
}

// surfaceDir is the directory of the package that declares a surface's
// tests, relative to the module root ("." for the root), and that
// package's name as its test files give it.
func surfaceDir(in Input, s registry.Surface) (string, string) {
	dir := strings.TrimPrefix(strings.TrimSuffix(s.Package, "/..."), "./")
	if dir == "" {
		dir = "."
	}
	if in.Digest != nil {
		for _, p := range in.Digest.Packages {
			if slices.Contains(surfacesOf(in.Registry, in.Module, p), s.ID) {
				dir = relDir(in.Root, p.Dir)
				break
			}
		}
	}
	return dir, packageName(filepath.Join(in.Root, filepath.FromSlash(dir)), s.Tests)
}

// packageName is the package clause of the test file in dir that declares
// one of tests, else of any Go file in dir, else dir's base name.
func packageName(dir string, tests []string) string {
	entries, _ := os.ReadDir(dir)
	var any string
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), b, parser.PackageClauseOnly)
		if err != nil {
			continue
		}
		name := f.Name.Name
		if any == "" && !strings.HasSuffix(name, "_test") {
			any = name
		}
		if strings.HasSuffix(e.Name(), "_test.go") && declares(b, tests) {
			return name
		}
	}
	if any != "" {
		return any
	}
	base := slug(filepath.Base(dir), 30)
	if base == "x" || unicode.IsDigit(rune(base[0])) {
		return "pkg" + base
	}
	return base
}

// declares reports whether Go source b declares one of tests' top-level
// functions.
func declares(b []byte, tests []string) bool {
	for _, t := range tests {
		top, _, _ := strings.Cut(t, "/")
		if strings.Contains(string(b), "func "+top+"(") {
			return true
		}
	}
	return false
}

// testFile is the file in dir that declares test, relative to root; dir's
// path when none does.
func testFile(root, dir, test string) string {
	abs := filepath.Join(root, filepath.FromSlash(dir))
	entries, _ := os.ReadDir(abs)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(abs, e.Name())); err == nil && declares(b, []string{test}) {
			return path.Join(dir, e.Name())
		}
	}
	return dir
}
