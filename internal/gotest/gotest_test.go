package gotest

import (
	"context"
	"errors"
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

func TestListBuildFailureCarriesOutput(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"ok/ok_test.go":    "package ok\n\nimport \"testing\"\n\nfunc TestFine(t *testing.T) {}\n",
		"broken/b.go":      "package broken\n\nfunc Broken( {\n",
		"broken/b_test.go": "package broken\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) {}\n",
	})
	names, err := List(context.Background(), dir)
	if err == nil {
		t.Fatalf("List of a module that does not build = %v, want an error", names)
	}
	if !errors.Is(err, ErrList) {
		t.Errorf("error %v does not wrap ErrList", err)
	}
	var le *ListError
	if !errors.As(err, &le) {
		t.Fatalf("error %T is not a *ListError", err)
	}
	for _, want := range []string{"broken/b.go", "syntax error"} {
		if !strings.Contains(le.Output, want) || !strings.Contains(err.Error(), want) {
			t.Errorf("output %q (and message) should contain %q", le.Output, want)
		}
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

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want []string
	}{
		{
			name: "names and summary lines",
			out:  "TestA\nBenchmarkB\nok  \texample.com/x\t0.003s\n?   \texample.com/y\t[no test files]\nExampleC\nFuzzD\n",
			want: []string{"BenchmarkB", "ExampleC", "FuzzD", "TestA"},
		},
		{
			name: "duplicates across packages collapse",
			out:  "TestA\nok  \tp\t0.1s\nTestA\nok  \tq\t0.1s\n",
			want: []string{"TestA"},
		},
		{
			name: "failure lines and noise are not names",
			out:  "FAIL\texample.com/z [build failed]\nFAIL\nok\nTest with space\n# example.com/z\nTestFine\n",
			want: []string{"TestFine"},
		},
		{name: "empty", out: "", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, parse([]byte(tc.out))); diff != "" {
				t.Errorf("parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
