package report

import (
	"context"
	"encoding/xml"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/verdict"
)

func samplePage() Page {
	return Page{
		Title: "contested validate", RunID: "20261129T101500Z-4f2a", Layer: "containers",
		Reasons: []string{"gate refused: phase 3 (every armed fault fired)"},
		Gate: &gate.Report{
			Mode: gate.Paired, RecordsRead: 3, Armed: 3, Fired: 2,
			Phases:           []gate.Phase{{Number: 1, Name: "records belong to this run", OK: true}, {Number: 3, Name: "every armed fault fired", Detail: "1 unfired"}},
			ByClass:          map[string]gate.ClassCount{"store": {Armed: 2, Fired: 2}, "mq-consumer": {Armed: 1, Fired: 0}},
			RecordingClasses: []string{"store", "mq-consumer"},
			Unfired:          []gate.Unfired{{Test: "TestConsumerContract/burst", Surface: "ledger.consumer", Leg: "burst", Replay: "CONTESTED_SEED=42 go test ./examples/ledger -run '^TestConsumerContract$/^burst$' -count=1"}},
			Capabilities: capability.Matrix{
				{Name: capability.Chromium, NeededBy: []string{"ledger.web/reset"}, Detail: "not found on PATH", Provide: "apt-get install chromium"},
				{Name: capability.Docker, Present: true, Version: "28.2.2", Source: "unix:///var/run/docker.sock", NeededBy: []string{"ledger.store/reset"}},
			},
		},
		Level: 1,
		Surfaces: []*contract.Result{{Surface: "ledger.store", Contract: verdict.Inconclusive, Legs: []verdict.Leg{
			{Lever: "reset", Verdict: verdict.PassSmoke, Armed: 2, Fired: 2, Oracles: []faultrecord.OracleRun{{Name: "exactly-once", Result: "held", OpsProduced: 20, OpsChecked: 20}}},
			{Lever: "confirm-timeout", Verdict: verdict.PartialModel, Armed: 1, Fired: 1, Reason: "oracle linearizability checked 770 of 779 operations", Replay: "CONTESTED_SEED=7 go test ./examples/ledger"},
			{Lever: "burst", Verdict: verdict.NotAtLevel, Reason: "runs only at levels 2, 3 (this run: level 1)"}}}},
		Plain: []ladder.Plain{{Package: "example.com/m/faultlayer", Test: "TestProviders/containers", FirstLine: "layer_test.go:42: debootstrap is not installed", Owner: ladder.PlainOwner, Action: "not a contract test: run it alone"}},
		Contracts: []*contract.Result{{Surface: "ledger.consumer", Contract: verdict.Red, Legs: []verdict.Leg{
			{Lever: "burst", Verdict: verdict.FailReproducible, Reason: "seed 42 failed, and again on rerun", Replay: "CONTESTED_SEED=42 go test ./examples/ledger"}}}},
		Ladder: []*ladder.Outcome{{Test: "TestConsumerContract/burst", Owner: ladder.Component, OwnerName: "ledger-team", Verdict: "FAIL-reproducible", Action: "fix ledger.consumer <now>"}},
		Battery: &battery.Result{
			Packages: []battery.Package{{Name: "example.com/m", Action: "fail", Elapsed: time.Second}, {Name: "example.com/broken", Action: "fail", Output: "undefined: x"}},
			Tests: []battery.Test{
				{Package: "example.com/m", Name: "TestA", Action: "pass"},
				{Package: "example.com/m", Name: "TestB", Action: "fail", Output: "b_test.go:3: <boom> & more"},
				{Package: "example.com/m", Name: "TestC", Action: "skip"},
			},
			ExitCode: 1,
		},
		Visualizations: []string{"../linearizability/TestStoreContract_reset.html"},
	}
}

func TestHTMLShowsEveryPartAndEscapes(t *testing.T) {
	var b strings.Builder
	if err := (HTML{}).Write(&b, samplePage()); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		">RED<", "REFUSED", "mq-consumer", "TestConsumerContract/burst", "CONTESTED_SEED=42",
		"FAIL-reproducible", "ledger-team", "PASS-smoke", "exactly-once held", `href="../linearizability/TestStoreContract_reset.html"`,
		"&lt;boom&gt; &amp; more", "fix ledger.consumer &lt;now&gt;", "undefined: x",
		"Contract verdicts from this run (level 1)", "exactly-once held (20/20 ops)", "PARTIAL-model", "checked 770 of 779", "CONTESTED_SEED=7", "NOT-AT-LEVEL",
		"Failures of the battery", "TestProviders/containers", "debootstrap is not installed", "test author / the package&#39;s maintainers",
		"Capabilities", "MISSING", "apt-get install chromium", "ledger.web/reset", "28.2.2",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(html, "<boom>") || strings.Contains(html, "<script") {
		t.Error("the report has unescaped text or a script")
	}
}

func TestJUnitHasASuitePerPackageAndKeepsABrokenPackage(t *testing.T) {
	var b strings.Builder
	if err := (JUnit{}).Write(&b, samplePage()); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	if got.Tests != 4 || got.Fails != 2 {
		t.Errorf("tests %d, failures %d; want 4 and 2 (3 tests and the broken package)", got.Tests, got.Fails)
	}
	if !strings.Contains(b.String(), "undefined: x") || !strings.Contains(b.String(), "&lt;boom&gt;") {
		t.Errorf("failures lack their output:\n%s", b.String())
	}
}

// TestJUnitCarriesOwnersUnderCI: under a CI, each failing case the page's
// failures list carries its owner, action, verdict and replay as
// properties and at the head of its failure (message and text), the
// broken package too, escaped as XML; outside one the JUnit names no
// owner.
func TestJUnitCarriesOwnersUnderCI(t *testing.T) {
	p := samplePage()
	p.Plain = []ladder.Plain{
		{Package: "example.com/m", Test: "TestB", Owner: "component (ledger-team)", Action: "fix <it> & replay", Verdict: "FAIL-reproducible", Replay: "CONTESTED_SEED=7 go test ./m -run '^TestB$'"},
		{Package: "example.com/broken", What: ladder.NotBuilt, Owner: ladder.PlainOwner, Action: "fix the compile error"},
	}
	var plain, owned strings.Builder
	if err := (JUnit{}).Write(&plain, p); err != nil {
		t.Fatal(err)
	}
	p.CI = true
	if err := (JUnit{}).Write(&owned, p); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "contested.owner") || strings.Contains(plain.String(), "owner") {
		t.Errorf("the JUnit without owners names one:\n%s", plain.String())
	}
	var got junitSuites
	if err := xml.Unmarshal([]byte(owned.String()), &got); err != nil {
		t.Fatalf("not XML: %v\n%s", err, owned.String())
	}
	cases := map[string]junitCase{}
	for _, s := range got.Suites {
		for _, c := range s.Cases {
			cases[c.Classname+" "+c.Name] = c
		}
	}
	b := cases["example.com/m TestB"]
	wantProps := []junitProperty{{"contested.owner", "component (ledger-team)"}, {"contested.action", "fix <it> & replay"},
		{"contested.verdict", "FAIL-reproducible"}, {"contested.replay", "CONTESTED_SEED=7 go test ./m -run '^TestB$'"}}
	if diff := cmp.Diff(wantProps, b.Properties); diff != "" {
		t.Errorf("TestB's properties (-want +got):\n%s", diff)
	}
	if b.Failure == nil || !strings.Contains(b.Failure.Message, "owner component (ledger-team); action: fix <it> & replay") ||
		!strings.HasPrefix(b.Failure.Body, "owner: component (ledger-team)\naction: fix <it> & replay\n") || !strings.Contains(b.Failure.Body, "<boom>") {
		t.Errorf("TestB's failure does not lead with its owner and action: %+v", b.Failure)
	}
	if c := cases["example.com/broken (package)"]; c.Failure == nil || !strings.Contains(c.Failure.Message, "owner "+ladder.PlainOwner) || len(c.Properties) != 2 {
		t.Errorf("the broken package's case: %+v", c)
	}
	if c := cases["example.com/m TestA"]; len(c.Properties) != 0 {
		t.Errorf("a passing test has properties: %+v", c.Properties)
	}
}

// TestEveryFormatHasAPathOfItsOwnAndSaysWhenItHasNothingToShow: the
// formats validate writes lie at distinct paths inside the results
// directory, each writes the full page, and a page without a battery
// gives the JUnit nothing to show and it writes nothing.
func TestEveryFormatHasAPathOfItsOwnAndSaysWhenItHasNothingToShow(t *testing.T) {
	paths := map[string]bool{}
	for _, f := range Formats {
		p := f.Path()
		if paths[p] || filepath.IsAbs(p) || !filepath.IsLocal(p) {
			t.Errorf("%T's path %q is not a path of its own inside the results directory", f, p)
		}
		paths[p] = true
		var b strings.Builder
		if err := f.Write(&b, samplePage()); err != nil || b.Len() == 0 {
			t.Errorf("%T writes the full page as %d bytes, %v", f, b.Len(), err)
		}
	}
	if got := (HTML{File: "degraded-report.html"}).Path(); got != filepath.Join("fault", "degraded-report.html") {
		t.Errorf("a named page lies at %q", got)
	}
	var b strings.Builder
	if err := (JUnit{}).Write(&b, Page{Title: "program-gate"}); !errors.Is(err, ErrNothingToShow) || b.Len() != 0 {
		t.Errorf("the JUnit of a page without a battery: %v and %d bytes; want ErrNothingToShow and none", err, b.Len())
	}
}

// TestReportRendersInABrowser opens the report in headless Chromium and
// reads what a person would see.
func TestReportRendersInABrowser(t *testing.T) {
	browser := capability.Require(t, capability.Chromium).Source
	dir := t.TempDir()
	path := filepath.Join(dir, "fault-report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := (HTML{}).Write(f, samplePage()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+path)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	dom := string(out)
	for _, want := range []string{`id="verdict"`, "RED", "Fault gate", "Armed and fired per class", "Arbitration: owners and actions", "ledger-team", "Linearizability visualizations"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
}

// TestEveryFormatTypeIsInFormats: each type of this package with a Path
// and a Write method is in Formats, so a new format is written by
// validate, program-gate and the merge, not only compiled.
func TestEveryFormatTypeIsInFormats(t *testing.T) {
	fset := token.NewFileSet()
	paths, _ := filepath.Glob("*.go")
	methods := map[string][]string{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
				if id, ok := fn.Recv.List[0].Type.(*ast.Ident); ok {
					methods[id.Name] = append(methods[id.Name], fn.Name.Name)
				}
			}
		}
	}
	listed := map[string]bool{}
	for _, f := range Formats {
		listed[reflect.TypeOf(f).Name()] = true
	}
	found := 0
	for typ, ms := range methods {
		if slices.Contains(ms, "Path") && slices.Contains(ms, "Write") {
			found++
			if !listed[typ] {
				t.Errorf("%s is a Format but not in Formats: no command writes it", typ)
			}
		}
	}
	if found < 2 {
		t.Errorf("found %d format types; the search for them is broken", found)
	}
}
