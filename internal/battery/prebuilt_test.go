package battery

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/internal/testmodule"
	"github.com/contested/contested/internal/tier"
)

// outcomes is a module with a package for each way a test binary can end
// that the battery tells apart, and one whose tests pass only in the
// environment go test gives a test binary (its directory, PWD, GOROOT/bin
// first on PATH).
var outcomes = map[string]string{
	"go.mod":                "module example.com/outcomes\n\ngo 1.24\n",
	"good/good_test.go":     "package good\nimport \"testing\"\nfunc TestGood(t *testing.T) {}\nfunc TestSkipped(t *testing.T) { t.Skip(\"not here\") }\n",
	"bad/bad_test.go":       "package bad\nimport \"testing\"\nfunc TestBad(t *testing.T) {\n\tt.Run(\"leg=reset\", func(t *testing.T) { t.Log(\"the oracle saw a duplicate\"); t.Fail() })\n\tt.Run(\"leg=ok\", func(t *testing.T) {})\n}\n",
	"broken/broken_test.go": "package broken\nimport \"testing\"\nfunc TestBroken(t *testing.T) { undefined() }\n",
	"vetted/vetted_test.go": "package vetted\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\nfunc TestVetted(t *testing.T) { fmt.Printf(\"%d\\n\", \"not a number\") }\n",
	"early/early_test.go":   "package early\nimport (\n\t\"os\"\n\t\"testing\"\n)\nfunc TestMain(m *testing.M) { os.Exit(3) }\nfunc TestNever(t *testing.T) {}\n",
	"quiet/quiet_test.go":   "package quiet\nimport (\n\t\"os\"\n\t\"testing\"\n)\nfunc TestMain(m *testing.M) { os.Exit(0) }\nfunc TestNever(t *testing.T) {}\n",
	"after/after_test.go":   "package after\nimport (\n\t\"os\"\n\t\"testing\"\n)\nfunc TestMain(m *testing.M) { m.Run(); os.Exit(1) }\nfunc TestFine(t *testing.T) {}\n",
	"boom/boom_test.go":     "package boom\nimport (\n\t\"testing\"\n\t\"time\"\n)\nfunc TestCalm(t *testing.T) {}\nfunc TestBoom(t *testing.T) {\n\tgo func() { panic(\"the worker gave up\") }()\n\ttime.Sleep(time.Hour)\n}\n",
	"slow/slow_test.go":     "package slow\nimport (\n\t\"testing\"\n\t\"time\"\n)\nfunc TestFast(t *testing.T) {}\nfunc TestSlow(t *testing.T) {\n\tt.Run(\"sub\", func(t *testing.T) { time.Sleep(time.Hour) })\n}\n",
	"notests/x.go":          "package notests\n",
	"where/where_test.go": `package where

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

func TestWhere(t *testing.T) {
	wd, _ := os.Getwd()
	if filepath.Base(wd) != "where" || os.Getenv("PWD") != wd {
		t.Errorf("working directory %s, PWD %s; want the package's", wd, os.Getenv("PWD"))
	}
	goBin, err := exec.LookPath("go")
	if err != nil || filepath.Dir(goBin) != filepath.Join(runtime.GOROOT(), "bin") {
		t.Errorf("go on PATH is %s (%v), want GOROOT/bin's", goBin, err)
	}
	t.Log("no newline at the end of this output")
	os.Stdout.WriteString("tail without a newline")
}
`,
}

// view is what the battery's readers use of a result: outcomes, causes and
// the failures' output with go's timings taken out.
type view struct {
	OK       bool
	Packages []Package
	Tests    []Test
}

// varying is what differs between two runs of one binary whoever runs it:
// timings, and a stack trace's goroutine numbers and addresses (steady also
// sorts its goroutines, whose order varies too).
var varying = []struct {
	re  *regexp.Regexp
	put string
}{
	{regexp.MustCompile(`\d+(\.\d+)?(s|ms|µs)\b`), "T"},
	{regexp.MustCompile(`0x[0-9a-f]+`), "0xH"},
	{regexp.MustCompile(`goroutine \d+`), "goroutine N"},
}

func steady(s string) string {
	for _, v := range varying {
		s = v.re.ReplaceAllString(s, v.put)
	}
	blocks := strings.Split(s, "\n\n")
	for i := 0; i < len(blocks); {
		j := i
		for j < len(blocks) && strings.HasPrefix(blocks[j], "goroutine N [") {
			j++
		}
		slices.Sort(blocks[i:j])
		i = max(j, i+1)
	}
	return strings.Join(blocks, "\n\n")
}

func viewOf(res *Result) view {
	v := view{OK: res.OK()}
	for _, p := range res.Packages {
		p.Elapsed, p.Output = 0, steady(p.Output)
		v.Packages = append(v.Packages, p)
	}
	for _, t := range res.Tests {
		t.Elapsed, t.Started, t.Output = 0, time.Time{}, steady(t.Output)
		v.Tests = append(v.Tests, t)
	}
	return v
}

// TestPrebuiltRunsReportAsGoTestDoes runs the same module through go test
// and through Binaries, with every test and with a -run that leaves most
// packages nothing to run (the two share their binaries, as the runs of a
// command do): the results the battery's readers see are the same, failure
// by failure, cause by cause, line by line.
func TestPrebuiltRunsReportAsGoTestDoes(t *testing.T) {
	t.Parallel()
	dir := testmodule.Write(t, outcomes)
	bins, err := NewBinaries(t.TempDir(), InStore(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bins.Close() })
	tests := []struct {
		name string
		args []string
	}{
		{"every test", nil},
		{"a -run that selects one test", []string{"-run", "^TestGood$"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := Options{Dir: dir, Args: tt.args, Timeout: 3 * time.Second}
			var plain, pre strings.Builder
			opts.Out = &plain
			want, err := Run(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.Out, opts.Binaries = &pre, bins
			got, err := Run(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(pre.String(), "each test binary built once") {
				t.Fatalf("the run did not go through Binaries:\n%s", pre.String())
			}
			if diff := cmp.Diff(viewOf(want), viewOf(got)); diff != "" {
				t.Errorf("through Binaries the battery reads differently (-go test +prebuilt):\n%s\ngo test:\n%s\nprebuilt:\n%s", diff, plain.String(), pre.String())
			}
			if len(want.Failed()) == 0 && tt.args == nil {
				t.Error("the module's failures did not fail: the comparison compares nothing")
			}
		})
	}
}

// TestAPackageIsBuiltOnceForTheCommand: runs of one package share its test
// binary whatever they select; another build flag is another binary; Close
// removes the command's own and leaves the kept copies.
func TestAPackageIsBuiltOnceForTheCommand(t *testing.T) {
	tier.Full(t, "go test of a planted module")
	t.Parallel()
	dir := testmodule.Write(t, map[string]string{
		"go.mod":        "module example.com/once\n\ngo 1.24\n",
		"a/a_test.go":   "package a\nimport \"testing\"\nfunc TestOne(t *testing.T) {}\nfunc TestTwo(t *testing.T) {}\n",
		"a/tag_test.go": "//go:build extra\n\npackage a\nimport \"testing\"\nfunc TestTagged(t *testing.T) {}\n",
	})
	store := t.TempDir()
	bins, err := NewBinaries(t.TempDir(), InStore(store))
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	ran := map[string]bool{}
	for _, args := range [][]string{{"-run", "^TestOne$"}, {"-run", "^TestTwo$"}, {"-run", "^TestTagged$", "-tags=extra"}, {"-run", "^TestOne$"}} {
		res, err := Run(context.Background(), Options{Dir: dir, Args: args, Out: &progress, Binaries: bins})
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK() {
			t.Fatalf("%v: not OK: %+v\n%s", args, res, progress.String())
		}
		for _, tst := range res.Tests {
			ran[tst.Name] = true
		}
	}
	if diff := cmp.Diff(map[string]bool{"TestOne": true, "TestTwo": true, "TestTagged": true}, ran); diff != "" {
		t.Errorf("tests that ran (-want +got):\n%s", diff)
	}
	if n := strings.Count(progress.String(), "building a's test binary once"); n != 2 {
		t.Errorf("the package was built %d times, want twice (once plain, once with -tags=extra):\n%s", n, progress.String())
	}
	files, _ := filepath.Glob(filepath.Join(bins.Dir(), "*.test"))
	if len(files) != 2 {
		t.Errorf("binaries %v, want two", files)
	}
	if err := bins.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(store, "run-*")); len(left) != 0 {
		t.Errorf("after Close, %s holds %v", store, left)
	}
	if kept, _ := filepath.Glob(filepath.Join(store, keptDir, "*.test")); len(kept) != 2 {
		t.Errorf("after Close, %s holds %v; want the two binaries kept for the next command", keptDir, kept)
	}
}

// TestAKilledCommandsBinariesAreSweptByTheNext: a command's directory stays
// while the command runs, and goes once its lock is free (the command died
// without Close).
func TestAKilledCommandsBinariesAreSweptByTheNext(t *testing.T) {
	t.Parallel()
	results, store := t.TempDir(), t.TempDir()
	running, err := NewBinaries(results, InStore(store))
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewBinaries(results, InStore(store))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := os.Stat(running.Dir()); err != nil {
		t.Fatalf("a running command's binaries were swept: %v", err)
	}
	running.unlock() // as when its process dies
	next, err := NewBinaries(results, InStore(store))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if _, err := os.Stat(running.Dir()); !os.IsNotExist(err) {
		t.Errorf("a dead command's binaries survive: %v", err)
	}
	if _, err := os.Stat(other.Dir()); err != nil {
		t.Errorf("a live command's binaries were swept: %v", err)
	}
}

// TestOnlyFlagsTheBinaryCarriesArePrebuilt: the flags a prebuilt run passes
// on, and those (here or in GOFLAGS) that send it through go test.
func TestOnlyFlagsTheBinaryCarriesArePrebuilt(t *testing.T) {
	base := []string{"-json", "-count=1", "-timeout=30m0s"}
	tests := []struct {
		name    string
		args    []string
		goflags string
		ok      bool
		build   []string
		test    []string
		p       int
	}{
		{"the battery's own", nil, "", true, []string{"-ldflags=-s -w"}, []string{"-test.count=1", "-test.timeout=30m0s"}, 0},
		{"a rerun's -run", []string{"-run", "^TestX$"}, "", true, []string{"-ldflags=-s -w"}, []string{"-test.count=1", "-test.timeout=30m0s", "-test.run=^TestX$"}, 0},
		{"test and build flags", []string{"-short", "-tags=a,b", "-race", "-v", "-timeout", "1m"}, "", true,
			[]string{"-tags=a,b", "-race", "-ldflags=-s -w"}, []string{"-test.count=1", "-test.timeout=30m0s", "-test.short", "-test.v", "-test.timeout=1m"}, 0},
		{"GOFLAGS with build flags", nil, "-mod=mod -tags=x", true, []string{"-ldflags=-s -w"}, []string{"-test.count=1", "-test.timeout=30m0s"}, 0},
		{"GOFLAGS with its own -ldflags", nil, "-ldflags=-X=main.v=1", true, nil, []string{"-test.count=1", "-test.timeout=30m0s"}, 0},
		{"go test's -p", []string{"-p", "4"}, "", true, []string{"-ldflags=-s -w"}, []string{"-test.count=1", "-test.timeout=30m0s"}, 4},
		{"-p in GOFLAGS, then on the command line", []string{"-p=2"}, "-p=3", true, []string{"-ldflags=-s -w"}, []string{"-test.count=1", "-test.timeout=30m0s"}, 2},
		{"a -p of none", []string{"-p", "0"}, "", false, nil, nil, 0},
		{"coverage", []string{"-cover"}, "", false, nil, nil, 0},
		{"a benchmark", []string{"-bench", "."}, "", false, nil, nil, 0},
		{"a flag without its value", []string{"-run"}, "", false, nil, nil, 0},
		{"GOFLAGS with a test flag", nil, "-count=3", false, nil, nil, 0},
		{"an argument for the binary", []string{"-args", "x"}, "", false, nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, ok := split(append(base, tt.args...), tt.goflags)
			if ok != tt.ok {
				t.Fatalf("split(%v, GOFLAGS %q) ok = %v, want %v", tt.args, tt.goflags, ok, tt.ok)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(invocation{build: tt.build, test: tt.test, p: tt.p}, inv, cmp.AllowUnexported(invocation{})); diff != "" {
				t.Errorf("split(%v) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestARunPrebuiltCannotCarryGoesThroughGoTest: with coverage asked for,
// Binaries are not used and go test runs as before.
func TestARunPrebuiltCannotCarryGoesThroughGoTest(t *testing.T) {
	t.Parallel()
	dir := testmodule.Write(t, map[string]string{
		"go.mod":      "module example.com/cover\n\ngo 1.24\n",
		"a/a.go":      "package a\nfunc F() int { return 1 }\n",
		"a/a_test.go": "package a\nimport \"testing\"\nfunc TestF(t *testing.T) { F() }\n",
	})
	bins, err := NewBinaries(t.TempDir(), InStore(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer bins.Close()
	var progress strings.Builder
	res, err := Run(context.Background(), Options{Dir: dir, Args: []string{"-cover"}, Out: &progress, Binaries: bins})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || strings.Contains(progress.String(), "built once") {
		t.Errorf("a -cover run: OK %v; want it OK and through go test:\n%s", res.OK(), progress.String())
	}
}

// TestTwoModulesOfOnePathGetABinaryEach: copies of one module (one import
// path, two directories, as the e2e tests make them) sharing Binaries each
// run their own code.
func TestTwoModulesOfOnePathGetABinaryEach(t *testing.T) {
	tier.Full(t, "go test of a planted module")
	t.Parallel()
	bins, err := NewBinaries(t.TempDir(), InStore(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer bins.Close()
	for _, pass := range []bool{true, false} {
		body := "package a\nimport \"testing\"\nfunc TestA(t *testing.T) {}\n"
		if !pass {
			body = "package a\nimport \"testing\"\nfunc TestA(t *testing.T) { t.Fatal(\"the second copy fails\") }\n"
		}
		dir := testmodule.Write(t, map[string]string{"go.mod": "module example.com/same\n\ngo 1.24\n", "a/a_test.go": body})
		res, err := Run(context.Background(), Options{Dir: dir, Binaries: bins})
		if err != nil {
			t.Fatal(err)
		}
		if res.OK() != pass {
			t.Errorf("the copy whose test should pass=%v ran with OK %v: another copy's binary?", pass, res.OK())
		}
	}
}

// TestTheBatterySaysHowManyPackagesRanAndHowManyAtOnce: it counts the
// packages whose test binary ran (never one without tests, nor the -p
// ceiling) and says how many ran at once only when more than one ran: a
// one-package module hears nothing of it.
func TestTheBatterySaysHowManyPackagesRanAndHowManyAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files map[string]string
		ran   int
		say   string
	}{
		{"two packages with tests and one without, one at a time", map[string]string{
			"go.mod":      "module example.com/three\n\ngo 1.24\n",
			"a/a_test.go": "package a\nimport \"testing\"\nfunc TestA(t *testing.T) {}\n",
			"b/b_test.go": "package b\nimport \"testing\"\nfunc TestB(t *testing.T) {}\n",
			"c/c.go":      "package c\n",
		}, 2, "2 packages ran, at most 1 at once (-p 1)"},
		{"a module of one package", map[string]string{
			"go.mod":      "module example.com/one\n\ngo 1.24\n",
			"one_test.go": "package one\nimport \"testing\"\nfunc TestOne(t *testing.T) {}\n",
		}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := testmodule.Write(t, tc.files)
			bins, err := NewBinaries(t.TempDir(), InStore(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { bins.Close() })
			res, err := Run(context.Background(), Options{Dir: dir, Args: []string{"-p", "1"}, Binaries: bins, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if res.Ran != tc.ran || res.AtOnce() != tc.say {
				t.Errorf("ran %d, says %q; want %d, %q", res.Ran, res.AtOnce(), tc.ran, tc.say)
			}
		})
	}
}
