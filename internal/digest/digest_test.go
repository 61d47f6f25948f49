package digest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/digest"
	"github.com/contested/contested/internal/testmodule"
)

// module writes a module of two packages, a and b, b importing a, each
// with a test, and returns its root.
func module(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"go.mod":            "module example.com/m\n\ngo 1.26\n",
		"a/a.go":            "package a\n\n// N is a number.\nfunc N() int { return 1 }\n",
		"a/a_test.go":       "package a\n\nimport \"testing\"\n\nfunc TestN(t *testing.T) {}\n",
		"b/b.go":            "package b\n\nimport \"example.com/m/a\"\n\n// M is a number.\nfunc M() int { return a.N() + 1 }\n",
		"b/b_test.go":       "package b_test\n\nimport \"testing\"\n\nfunc TestM(t *testing.T) {}\n\nfunc TestOther(t *testing.T) {}\n",
		"b/testdata/in.txt": "input\n",
	}
	for name, body := range files {
		write(t, filepath.Join(root, name), body)
	}
	return root
}

func write(t *testing.T, p, body string) { t.Helper(); testmodule.WriteFile(t, p, body) }

func load(t *testing.T, root string, env ...string) map[string]digest.Package {
	t.Helper()
	m, err := digest.Load(context.Background(), root, digest.WithEnv(append(os.Environ(), env...)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]digest.Package{}
	for _, p := range m.Packages {
		out[p.ImportPath] = p
	}
	return out
}

// TestADigestChangesWithWhatItsTestBinaryIsMadeOf: each change changes the
// digests of exactly the packages whose test binary or tests it reaches.
func TestADigestChangesWithWhatItsTestBinaryIsMadeOf(t *testing.T) {
	tests := []struct {
		name    string
		change  func(t *testing.T, root string)
		env     []string
		changed []string
	}{
		{"nothing", func(*testing.T, string) {}, nil, nil},
		{"the library b links", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "a/a.go"), "package a\n\n// N is a number.\nfunc N() int { return 2 }\n")
		}, nil, []string{"a", "b"}},
		{"b's test", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "b/b_test.go"), "package b_test\n\nimport \"testing\"\n\nfunc TestM(t *testing.T) { t.Log() }\n")
		}, nil, []string{"b"}},
		{"b's testdata", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "b/testdata/in.txt"), "other input\n")
		}, nil, []string{"b"}},
		{"a new file in a", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "a/more.go"), "package a\n\nfunc more() {}\n")
		}, nil, []string{"a", "b"}},
		{"the module graph", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "go.mod"), "module example.com/m\n\ngo 1.26\n\n// a comment\n")
		}, nil, []string{"a", "b"}},
		{"build tags", func(*testing.T, string) {}, []string{"GOFLAGS=-tags=other"}, []string{"a", "b"}},
		{"GOARCH", func(*testing.T, string) {}, []string{"GOARCH=386"}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := module(t)
			before := load(t, root)
			if len(before) != 2 {
				t.Fatalf("packages %v, want a and b", before)
			}
			tt.change(t, root)
			after := load(t, root, tt.env...)
			for _, name := range []string{"a", "b"} {
				ip := "example.com/m/" + name
				want := false
				for _, c := range tt.changed {
					want = want || c == name
				}
				if got := before[ip].Digest != after[ip].Digest; got != want {
					t.Errorf("%s: digest changed %v, want %v", name, got, want)
				}
			}
		})
	}
}

func TestTheTestsAPackageDeclaresAreListed(t *testing.T) {
	got := load(t, module(t))["example.com/m/b"].Tests
	if len(got) != 2 || got[0] != "TestM" || got[1] != "TestOther" {
		t.Errorf("b's tests %v, want [TestM TestOther]", got)
	}
}

// BenchmarkDigestOfThisRepository is the warm digest of this repository,
// every file hashed by content: its target is at most 3 s (reported as
// s/digest).
func BenchmarkDigestOfThisRepository(b *testing.B) {
	ctx := context.Background()
	if _, err := digest.Load(ctx, "../.."); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := digest.Load(ctx, "../.."); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/digest")
}

// TestADependencysTestsAreNotItsDependentsInputs: a test of a, which b's
// test binary does not link, leaves b's digest alone.
func TestADependencysTestsAreNotItsDependentsInputs(t *testing.T) {
	root := module(t)
	before := load(t, root)
	write(t, filepath.Join(root, "a/a_test.go"), "package a\n\nimport \"testing\"\n\nfunc TestN(t *testing.T) { t.Log() }\n")
	after := load(t, root)
	if before["example.com/m/a"].Digest == after["example.com/m/a"].Digest {
		t.Error("a's own test changed and a's digest did not")
	}
	if before["example.com/m/b"].Digest != after["example.com/m/b"].Digest {
		t.Error("a's test changed b's digest, whose test binary does not link it")
	}
}

// TestWhatAPackageReadsAtRunTimeIsItsInput: the files WithReads names for
// a package join its digest, and only its.
func TestWhatAPackageReadsAtRunTimeIsItsInput(t *testing.T) {
	reads := digest.WithReads(func(dir string) []string {
		if dir == "b" {
			return []string{"fixture", "README.md", "later.txt"}
		}
		return nil
	})
	tests := []struct {
		name    string
		change  func(t *testing.T, root string)
		changed bool // b's digest; a's never changes
	}{
		{"nothing", func(*testing.T, string) {}, false},
		{"a file in the tree", func(t *testing.T, root string) { write(t, filepath.Join(root, "fixture/f.txt"), "other\n") }, true},
		{"a new file in the tree", func(t *testing.T, root string) { write(t, filepath.Join(root, "fixture/sub/g.txt"), "g\n") }, true},
		{"the file", func(t *testing.T, root string) { write(t, filepath.Join(root, "README.md"), "# other\n") }, true},
		{"the tree removed", func(t *testing.T, root string) { os.RemoveAll(filepath.Join(root, "fixture")) }, true},
		{"a path that was absent appears", func(t *testing.T, root string) { write(t, filepath.Join(root, "later.txt"), "now\n") }, true},
		{"a file nobody reads", func(t *testing.T, root string) { write(t, filepath.Join(root, "other.txt"), "x\n") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := module(t)
			write(t, filepath.Join(root, "fixture/f.txt"), "f\n")
			write(t, filepath.Join(root, "README.md"), "# m\n")
			get := func() map[string]string {
				m, err := digest.Load(context.Background(), root, reads)
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]string{}
				for _, p := range m.Packages {
					out[p.ImportPath] = p.Digest
				}
				return out
			}
			before := get()
			tt.change(t, root)
			after := get()
			if before["example.com/m/a"] != after["example.com/m/a"] {
				t.Errorf("a's digest changed, though a reads nothing")
			}
			if got := before["example.com/m/b"] != after["example.com/m/b"]; got != tt.changed {
				t.Errorf("b's digest changed %v, want %v", got, tt.changed)
			}
		})
	}
}

// TestFilesAreWhatAChangeReachesThePackageThrough: a package's files are
// its own sources and tests, those of the module's packages it links, and
// its testdata, never another package's tests.
func TestFilesAreWhatAChangeReachesThePackageThrough(t *testing.T) {
	root := module(t)
	pkgs := load(t, root)
	want := map[string]string{
		"example.com/m/a": "a/a.go a/a_test.go",
		"example.com/m/b": "a/a.go b/b.go b/b_test.go b/testdata/",
	}
	for p, w := range want {
		if got := strings.Join(pkgs[p].Files, " "); got != w {
			t.Errorf("%s: files %q, want %q", p, got, w)
		}
	}
}
