package digest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/digest"
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

func write(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// An older modification time, as an edit a while ago: the hash cache
	// does not remember a file changed within the last second.
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, root, cache string, env ...string) map[string]digest.Package {
	t.Helper()
	m, err := digest.Load(context.Background(), root, digest.WithCacheDir(cache), digest.WithEnv(append(os.Environ(), env...)))
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
			root, cache := module(t), filepath.Join(t.TempDir(), "cache")
			before := load(t, root, cache)
			if len(before) != 2 {
				t.Fatalf("packages %v, want a and b", before)
			}
			tt.change(t, root)
			after := load(t, root, cache, tt.env...)
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
	got := load(t, module(t), filepath.Join(t.TempDir(), "cache"))["example.com/m/b"].Tests
	if len(got) != 2 || got[0] != "TestM" || got[1] != "TestOther" {
		t.Errorf("b's tests %v, want [TestM TestOther]", got)
	}
}

// TestAWarmDigestDoesNotList: nothing changed, the listing comes from the
// cache; a cache nobody can use (none) still gives the same digests.
func TestAWarmDigestDoesNotList(t *testing.T) {
	root, cache := module(t), filepath.Join(t.TempDir(), "cache")
	ctx := context.Background()
	cold, err := digest.Load(ctx, root, digest.WithCacheDir(cache))
	if err != nil {
		t.Fatal(err)
	}
	warm, err := digest.Load(ctx, root, digest.WithCacheDir(cache))
	if err != nil {
		t.Fatal(err)
	}
	none, err := digest.Load(ctx, root, digest.WithCacheDir(""))
	if err != nil {
		t.Fatal(err)
	}
	if !cold.Relisted || warm.Relisted {
		t.Errorf("relisted: cold %v, warm %v; want true, false", cold.Relisted, warm.Relisted)
	}
	for i := range cold.Packages {
		if cold.Packages[i].Digest != warm.Packages[i].Digest || cold.Packages[i].Digest != none.Packages[i].Digest {
			t.Errorf("%s: digests differ: cold %s, warm %s, uncached %s", cold.Packages[i].ImportPath, cold.Packages[i].Digest, warm.Packages[i].Digest, none.Packages[i].Digest)
		}
	}
	if warm.Path != "example.com/m" {
		t.Errorf("module path %q", warm.Path)
	}
}

// BenchmarkDigestOfThisRepository is the warm digest of this repository:
// its target is at most 3 s (reported as s/digest).
func BenchmarkDigestOfThisRepository(b *testing.B) {
	cache := filepath.Join(b.TempDir(), "cache")
	ctx := context.Background()
	if _, err := digest.Load(ctx, "../..", digest.WithCacheDir(cache)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		m, err := digest.Load(ctx, "../..", digest.WithCacheDir(cache))
		if err != nil {
			b.Fatal(err)
		}
		if m.Relisted {
			b.Fatal("a warm digest listed the packages again")
		}
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/digest")
}

// TestADependencysTestsAreNotItsDependentsInputs: a test of a, which b's
// test binary does not link, leaves b's digest alone.
func TestADependencysTestsAreNotItsDependentsInputs(t *testing.T) {
	root, cache := module(t), filepath.Join(t.TempDir(), "cache")
	before := load(t, root, cache)
	write(t, filepath.Join(root, "a/a_test.go"), "package a\n\nimport \"testing\"\n\nfunc TestN(t *testing.T) { t.Log() }\n")
	after := load(t, root, cache)
	if before["example.com/m/a"].Digest == after["example.com/m/a"].Digest {
		t.Error("a's own test changed and a's digest did not")
	}
	if before["example.com/m/b"].Digest != after["example.com/m/b"].Digest {
		t.Error("a's test changed b's digest, whose test binary does not link it")
	}
}

// TestACacheAnotherUserCouldWriteIsNotUsed: a cache directory open to
// other users is refused, said, and the digests are the same without it.
func TestACacheAnotherUserCouldWriteIsNotUsed(t *testing.T) {
	root, cache := module(t), filepath.Join(t.TempDir(), "cache")
	ctx := context.Background()
	good, err := digest.Load(ctx, root, digest.WithCacheDir(cache))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cache, 0o777); err != nil {
		t.Fatal(err)
	}
	open, err := digest.Load(ctx, root, digest.WithCacheDir(cache))
	if err != nil {
		t.Fatal(err)
	}
	if !open.Relisted || !strings.Contains(open.CacheRefused, "lets other users in") {
		t.Errorf("relisted %v, cache refused %q; want the open cache refused, saying why", open.Relisted, open.CacheRefused)
	}
	for i := range good.Packages {
		if good.Packages[i].Digest != open.Packages[i].Digest {
			t.Errorf("%s: the digest differs without the cache", good.Packages[i].ImportPath)
		}
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
			root, cache := module(t), filepath.Join(t.TempDir(), "cache")
			write(t, filepath.Join(root, "fixture/f.txt"), "f\n")
			write(t, filepath.Join(root, "README.md"), "# m\n")
			get := func() map[string]string {
				m, err := digest.Load(context.Background(), root, digest.WithCacheDir(cache), reads)
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
	pkgs := load(t, root, "")
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
