package digest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/digest"
)

// rewrite truncates and writes p in place, then gives it back the times it
// had: an edit no file time shows, as an editor that keeps times, a
// restore from an archive, or a second edit within one tick of the clock
// make.
func rewrite(t *testing.T, p, body string) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.Stat(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(body); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Dir(p), dir.ModTime(), dir.ModTime()); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// TestEveryLayoutsInputsAreSeen: in each layout a module can have, a
// change to what the go command builds b's test binary from, or to b's
// testdata through whatever links it has, changes b's digest, however the
// file was edited.
func TestEveryLayoutsInputsAreSeen(t *testing.T) {
	tests := []struct {
		name   string
		layout func(t *testing.T, root, outside string) // before the first digest
		change func(t *testing.T, root, outside string)
		env    []string
		reads  []string // what [reuse] reads names for b
	}{
		{"testdata is a link to a shared directory, and a file behind it changes",
			func(t *testing.T, root, outside string) {
				os.RemoveAll(filepath.Join(root, "b/testdata"))
				write(t, filepath.Join(outside, "shared/in.txt"), "input\n")
				link(t, filepath.Join(outside, "shared"), filepath.Join(root, "b/testdata"))
			},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(outside, "shared/in.txt"), "other\n")
			}, nil, nil},
		{"a link inside testdata keeps its name and its target's content changes",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(outside, "golden.json"), `{"n":1}`)
				link(t, filepath.Join(outside, "golden.json"), filepath.Join(root, "b/testdata/golden.json"))
			},
			func(t *testing.T, root, outside string) { rewrite(t, filepath.Join(outside, "golden.json"), `{"n":2}`) }, nil, nil},
		{"a link inside testdata to a directory, and a file in it changes",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(outside, "fixtures/a/x.sql"), "select 1;\n")
				link(t, filepath.Join(outside, "fixtures"), filepath.Join(root, "b/testdata/fixtures"))
			},
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(outside, "fixtures/a/x.sql"), "select 2;\n")
			}, nil, nil},
		{"a [reuse] reads entry is a link to a directory, and a file in it changes",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(outside, "docs/page.md"), "# one\n")
				link(t, filepath.Join(outside, "docs"), filepath.Join(root, "docs"))
			},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(outside, "docs/page.md"), "# two\n")
			}, nil, []string{"docs"}},
		{"a vendored module's file is edited",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(root, "go.mod"), "module example.com/m\n\ngo 1.26\n\nrequire example.com/dep v1.0.0\n")
				write(t, filepath.Join(root, "vendor/modules.txt"), "# example.com/dep v1.0.0\n## explicit\nexample.com/dep\n")
				write(t, filepath.Join(root, "vendor/example.com/dep/dep.go"), "package dep\n\n// K is a constant.\nconst K = 1\n")
				write(t, filepath.Join(root, "b/dep.go"), "package b\n\nimport \"example.com/dep\"\n\nvar _ = dep.K\n")
			},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(root, "vendor/example.com/dep/dep.go"), "package dep\n\n// K is a constant.\nconst K = 2\n")
			}, nil, nil},
		{"a go.work in a parent directory gains a replace",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(root, "go.mod"), "module example.com/m\n\ngo 1.26\n\nrequire example.com/dep v1.0.0\n")
				write(t, filepath.Join(root, "b/dep.go"), "package b\n\nimport \"example.com/dep\"\n\nvar _ = dep.K\n")
				write(t, filepath.Join(root, "../dep/go.mod"), "module example.com/dep\n\ngo 1.26\n")
				write(t, filepath.Join(root, "../dep/dep.go"), "package dep\n\n// K is a constant.\nconst K = 1\n")
				write(t, filepath.Join(root, "../dep2/go.mod"), "module example.com/dep\n\ngo 1.26\n")
				write(t, filepath.Join(root, "../dep2/dep.go"), "package dep\n\n// K is a constant.\nconst K = 2\n")
				write(t, filepath.Join(root, "../go.work"), "go 1.26\n\nuse ./m\n\nreplace example.com/dep v1.0.0 => ./dep\n")
			},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(root, "../go.work"), "go 1.26\n\nuse ./m\n\nreplace example.com/dep v1.0.0 => ./dep2\n")
			}, nil, nil},
		{"a go.work in a parent directory gains a godebug line",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(root, "../go.work"), "go 1.26\n\nuse ./m\n")
			},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(root, "../go.work"), "go 1.26\n\ngodebug asynctimerchan=1\n\nuse ./m\n")
			}, nil, nil},
		{"a module a go.work uses is edited",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(root, "go.mod"), "module example.com/m\n\ngo 1.26\n\nrequire example.com/dep v1.0.0\n")
				write(t, filepath.Join(root, "b/dep.go"), "package b\n\nimport \"example.com/dep\"\n\nvar _ = dep.K\n")
				write(t, filepath.Join(root, "../dep/go.mod"), "module example.com/dep\n\ngo 1.26\n")
				write(t, filepath.Join(root, "../dep/dep.go"), "package dep\n\n// K is a constant.\nconst K = 1\n")
				write(t, filepath.Join(root, "../go.work"), "go 1.26\n\nuse (\n\t./m\n\t./dep\n)\n")
			},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(root, "../dep/dep.go"), "package dep\n\n// K is a constant.\nconst K = 3\n")
			}, nil, nil},
		{"a module replaced by a directory is edited",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(root, "go.mod"), "module example.com/m\n\ngo 1.26\n\nrequire example.com/dep v1.0.0\n\nreplace example.com/dep => ../dep\n")
				write(t, filepath.Join(root, "b/dep.go"), "package b\n\nimport \"example.com/dep\"\n\nvar _ = dep.K\n")
				write(t, filepath.Join(root, "../dep/go.mod"), "module example.com/dep\n\ngo 1.26\n")
				write(t, filepath.Join(root, "../dep/dep.go"), "package dep\n\n// K is a constant.\nconst K = 1\n")
			},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(root, "../dep/dep.go"), "package dep\n\n// K is a constant.\nconst K = 4\n")
			}, nil, nil},
		{"a build constraint is deleted in place, times kept",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(root, "b/defect.go"), "//go:build defect\n\npackage b\n\nfunc init() { broken = true }\n")
				write(t, filepath.Join(root, "b/flag.go"), "package b\n\nvar broken bool\n")
			},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(root, "b/defect.go"), "package b\n\nfunc init() { broken = true }\n")
			}, nil, nil},
		{"a source is edited to the same size, times kept",
			func(t *testing.T, root, outside string) {},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(root, "b/b.go"), "package b\n\nimport \"example.com/m/a\"\n\n// M is a number.\nfunc M() int { return a.N() + 2 }\n")
			}, nil, nil},
		{"a new file appears, the directory's times kept",
			func(t *testing.T, root, outside string) {},
			func(t *testing.T, root, outside string) {
				d := filepath.Join(root, "b")
				fi, _ := os.Stat(d)
				write(t, filepath.Join(d, "extra.go"), "package b\n\nfunc init() {}\n")
				os.Chtimes(d, fi.ModTime(), fi.ModTime())
			}, nil, nil},
		{"an embedded file is edited",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(root, "b/embed.go"), "package b\n\nimport _ \"embed\"\n\n//go:embed schema.sql\nvar schema string\n")
				write(t, filepath.Join(root, "b/schema.sql"), "create table t (n int);\n")
			},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(root, "b/schema.sql"), "create table t (n text);\n")
			}, nil, nil},
		{"a file an -overlay in GOFLAGS puts in place of another is edited",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(outside, "b.go"), "package b\n\nimport \"example.com/m/a\"\n\n// M is a number.\nfunc M() int { return a.N() + 1 }\n")
				write(t, filepath.Join(outside, "overlay.json"), `{"Replace": {"`+filepath.Join(root, "b/b.go")+`": "`+filepath.Join(outside, "b.go")+`"}}`)
			},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(outside, "b.go"), "package b\n\nimport \"example.com/m/a\"\n\n// M is a number.\nfunc M() int { return a.N() + 9 }\n")
			}, []string{"GOFLAGS=-overlay=OUTSIDE/overlay.json"}, nil},
		{"a header a cgo preamble includes from an -I directory is edited",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(root, "include/limits.h"), "#define LIMIT 1\n")
				write(t, filepath.Join(root, "b/cgo.go"), "package b\n\n// #cgo CFLAGS: -I${SRCDIR}/../include\n// #include \"limits.h\"\nimport \"C\"\n\nvar limit = C.LIMIT\n")
			},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(root, "include/limits.h"), "#define LIMIT 2\n")
			},
			[]string{"CGO_ENABLED=1"}, nil},
		{"a header a C file includes from a header it includes is edited",
			func(t *testing.T, root, outside string) {
				write(t, filepath.Join(root, "include/outer.h"), "#include \"inner.h\"\n")
				write(t, filepath.Join(root, "include/inner.h"), "#define INNER 1\n")
				write(t, filepath.Join(root, "b/cgo.go"), "package b\n\n// #cgo CFLAGS: -I${SRCDIR}/../include\n// int inner(void);\nimport \"C\"\n\nvar _ = C.inner\n")
				write(t, filepath.Join(root, "b/inner.c"), "#include <outer.h>\nint inner(void) { return INNER; }\n")
			},
			func(t *testing.T, root, outside string) {
				rewrite(t, filepath.Join(root, "include/inner.h"), "#define INNER 7\n")
			},
			[]string{"CGO_ENABLED=1"}, nil},
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Log("gcc is not installed: the cgo cases list no cgo files, so they check less (apt-get install gcc)")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			root := filepath.Join(parent, "m")
			for name, body := range map[string]string{
				"go.mod":            "module example.com/m\n\ngo 1.26\n",
				"a/a.go":            "package a\n\n// N is a number.\nfunc N() int { return 1 }\n",
				"a/a_test.go":       "package a\n\nimport \"testing\"\n\nfunc TestN(t *testing.T) {}\n",
				"b/b.go":            "package b\n\nimport \"example.com/m/a\"\n\n// M is a number.\nfunc M() int { return a.N() + 1 }\n",
				"b/b_test.go":       "package b_test\n\nimport \"testing\"\n\nfunc TestM(t *testing.T) {}\n",
				"b/testdata/in.txt": "input\n",
			} {
				write(t, filepath.Join(root, name), body)
			}
			outside := t.TempDir()
			tt.layout(t, root, outside)
			env := []string{"GOFLAGS=", "GOWORK="}
			for _, e := range tt.env {
				env = append(env, strings.ReplaceAll(e, "OUTSIDE", outside))
			}
			var opts []digest.Option
			if tt.reads != nil {
				opts = append(opts, digest.WithReads(func(dir string) []string {
					if dir == "b" {
						return tt.reads
					}
					return nil
				}))
			}
			get := func() (string, string) {
				m, err := digest.Load(t.Context(), root, append(opts, digest.WithEnv(append(os.Environ(), env...)))...)
				if err != nil {
					t.Fatal(err)
				}
				a, _ := m.Package("example.com/m/a")
				b, ok := m.Package("example.com/m/b")
				if !ok {
					t.Fatalf("no package b in %+v", m.Packages)
				}
				return a.Digest, b.Digest
			}
			a1, b1 := get()
			if a2, b2 := get(); a2 != a1 || b2 != b1 {
				t.Fatal("two digests of one unchanged tree differ")
			}
			time.Sleep(10 * time.Millisecond)
			tt.change(t, root, outside)
			a2, b2 := get()
			if b2 == b1 {
				t.Errorf("b's digest did not change")
			}
			if a2 != a1 && !strings.Contains(tt.name, "module") && !strings.Contains(tt.name, "go.work") && !strings.Contains(tt.name, "vendored") && !strings.Contains(tt.name, "GOFLAGS") {
				t.Errorf("a's digest changed, though nothing a is built from did")
			}
		})
	}
}

// TestTheSameTreeElsewhereHasTheSameDigests: a digest names files
// relative to the module, so a checkout in another directory (a CI
// runner's, a teammate's) can reuse what this one certified.
func TestTheSameTreeElsewhereHasTheSameDigests(t *testing.T) {
	one, two := module(t), module(t)
	a, b := load(t, one), load(t, two)
	for ip, p := range a {
		if b[ip].Digest != p.Digest {
			t.Errorf("%s: %s here, %s in another checkout", ip, p.Digest, b[ip].Digest)
		}
	}
}
