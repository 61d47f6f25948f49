package gotest

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/internal/testmodule"
)

// writeModule writes a module named example.com/tiny with files.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	files["go.mod"] = "module example.com/tiny\n\ngo 1.26\n"
	return testmodule.Write(t, files)
}

func TestListTinyModule(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"a/a.go": "package a\n\nfunc X() int { return 1 }\n",
		"a/a_test.go": `package a

import "testing"

func TestAlpha(t *testing.T)       {}
func BenchmarkBeta(b *testing.B)   {}
func FuzzGamma(f *testing.F)       {}
func ExampleX() {
	println(X())
	// Output:
}
`,
		"b/b.go":      "package b\n", // no test files: a "?" line
		"c/c_test.go": "package c\n\nimport \"testing\"\n\nfunc TestAlpha(t *testing.T) {}\nfunc TestDelta(t *testing.T) {}\n",
	})

	tests := []struct {
		name     string
		patterns []string
		want     []string
	}{
		{name: "default pattern is the whole module", want: []string{"BenchmarkBeta", "ExampleX", "FuzzGamma", "TestAlpha", "TestDelta"}},
		{name: "one package", patterns: []string{"./c"}, want: []string{"TestAlpha", "TestDelta"}},
		{name: "package without tests", patterns: []string{"./b"}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := List(t.Context(), dir, tc.patterns...)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("List mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListReadsSourceNotBinaries(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"ok/ok_test.go": "package ok\n\nimport \"testing\"\n\nfunc TestFine(t *testing.T) {}\n",
		// A package that does not build still has an inventory: the battery reports the build.
		"broken/b.go":      "package broken\n\nfunc Broken( {\n",
		"broken/b_test.go": "package broken\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) {}\n",
		// A TestMain that cannot set up (its image cannot be pulled, say) must not run.
		"main/m_test.go": `package main_test

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(3) }
func TestBehindMain(t *testing.T) {}
`,
		// What go test does not run is not inventory.
		"shapes/s_test.go": `package shapes

import "testing"

type suite struct{}

func (suite) TestMethod(t *testing.T) {}
func Testlower(t *testing.T)          {}
func TestNoParam()                    {}
func TestResult(t *testing.T) error   { return nil }
func TestWrongType(b *testing.B)      {}
func TestGeneric[T any](t *testing.T) {}
func Test(t *testing.T)               {}
func Test_under(t *testing.T)         {}
func ExampleArgs(t *testing.T)        {}
func Example()                        {}
`,
		// A file the build excludes holds no test of this build.
		"tagged/t_test.go": "//go:build never\n\npackage tagged\n\nimport \"testing\"\n\nfunc TestTagged(t *testing.T) {}\n",
	})
	got, err := List(t.Context(), dir)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	want := []string{"Example", "Test", "TestBehindMain", "TestBroken", "TestFine", "Test_under"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List mismatch (-want +got):\n%s", diff)
	}
}

func TestListUnparsableTestFileNamesFileAndLine(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"ok/ok_test.go": "package ok\n\nimport \"testing\"\n\nfunc TestFine(t *testing.T) {}\n",
		"bad/b_test.go": "package bad\n\nimport \"testing\"\n\nfunc TestBad(t *testing.T {\n",
	})
	names, err := List(context.Background(), dir)
	if err == nil {
		t.Fatalf("List with an unparsable test file = %v, want an error", names)
	}
	if !errors.Is(err, ErrList) {
		t.Errorf("error %v does not wrap ErrList", err)
	}
	var le *ListError
	if !errors.As(err, &le) {
		t.Fatalf("error %T is not a *ListError", err)
	}
	for _, want := range []string{"bad/b_test.go:5", "syntax error"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q should contain %q", err.Error(), want)
		}
	}
}

// TestAnUnparsableTestFileHidesNoOtherTest: the names of every other file come back with the
// error, and so do those the parser recovered from the broken file before its error.
func TestAnUnparsableTestFileHidesNoOtherTest(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"ok/ok_test.go": "package ok\n\nimport \"testing\"\n\nfunc TestFine(t *testing.T) {}\n",
		"bad/b_test.go": "package bad\n\nimport \"testing\"\n\nfunc TestBefore(t *testing.T) {}\n\nfunc TestBad(t *testing.T) {\n\tif true {\n}\n",
	})
	names, err := List(t.Context(), dir)
	if !errors.Is(err, ErrUnparsed) || !errors.Is(err, ErrList) || errors.Is(err, ErrPattern) {
		t.Fatalf("err = %v; want ErrUnparsed and ErrList, not ErrPattern", err)
	}
	if !strings.Contains(err.Error(), "bad/b_test.go:9") {
		t.Errorf("message %q does not name the file and line", err)
	}
	for _, want := range []string{"TestFine", "TestBefore"} {
		if !slices.Contains(names, want) {
			t.Errorf("names %v lack %s", names, want)
		}
	}
}

func TestListBadPatternIsAnError(t *testing.T) {
	dir := writeModule(t, map[string]string{"a/a_test.go": "package a\n"})
	if names, err := List(t.Context(), dir, "./nowhere"); !errors.Is(err, ErrPattern) || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("List of a package that does not exist = %v, %v; want ErrPattern naming it", names, err)
	}
	if names, err := List(t.Context(), dir, "./nowhere/..."); !errors.Is(err, ErrList) || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("List of a directory that does not exist = %v, %v; want ErrList naming it", names, err)
	}
	if _, err := List(t.Context(), t.TempDir()); !errors.Is(err, ErrList) {
		t.Errorf("List outside any module: err = %v, want ErrList", err)
	}
}

func TestListCancelled(t *testing.T) {
	dir := writeModule(t, map[string]string{"a/a_test.go": "package a\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := List(ctx, dir); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context: err = %v, want context.Canceled", err)
	}
}

// TestDeclarationsSayWhereEachTestIsDeclared: the file and line of each
// test's name, by import path, in the package's in-package and external
// test files, the packages named by import path as a failure names them.
func TestDeclarationsSayWhereEachTestIsDeclared(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"a/a.go":      "package a\n",
		"a/a_test.go": "package a\n\nimport \"testing\"\n\n// TestAlpha is documented.\nfunc TestAlpha(t *testing.T) {}\n",
		"a/x_test.go": "package a_test\n\nimport \"testing\"\n\nfunc helper() {}\n\nfunc TestOutside(t *testing.T) {\n}\n",
		"c/c_test.go": "package c\n\nimport \"testing\"\n\nfunc TestAlpha(t *testing.T) {}\n",
	})
	got, err := Declarations(t.Context(), dir, "example.com/tiny/a", "example.com/tiny/c")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Declaration{
		"example.com/tiny/a.TestAlpha":   {File: filepath.Join(dir, "a", "a_test.go"), Line: 6},
		"example.com/tiny/a.TestOutside": {File: filepath.Join(dir, "a", "x_test.go"), Line: 7},
		"example.com/tiny/c.TestAlpha":   {File: filepath.Join(dir, "c", "c_test.go"), Line: 5},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Declarations (-want +got):\n%s", diff)
	}
}
