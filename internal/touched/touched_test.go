package touched_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/internal/testmodule"
	"github.com/contested/contested/internal/touched"
)

// fixtureTest reads, at run time, what each case of
// TestWhatATestTouchedIsItsInput changes.
const fixtureTest = `package p

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReads(t *testing.T) {
	for _, f := range []string{"fixture.json", "migrations/001.sql", "../shared/golden.txt", os.Getenv("OUTSIDE")} {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.ReadDir("migrations"); err != nil {
		t.Fatal(err)
	}
	_, _ = os.Stat("optional.txt")
	_, _ = os.Stat("busy")
	_ = os.Getenv("CLIENTS")
	_ = os.Getenv("API_TOKEN")
	_ = os.Getenv("DATABASE_URL")
	_ = os.Getenv("RUN_ID")
	if err := os.WriteFile(filepath.Join(t.TempDir(), "scratch"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
`

// buildFixture builds fixtureTest's test binary once; each case runs it
// in a module of its own.
func buildFixture(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "go.mod"), "module example.com/m\n\ngo 1.26\n")
	writeFile(t, filepath.Join(src, "p/p_test.go"), fixtureTest)
	bin := filepath.Join(t.TempDir(), "p.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Dir = filepath.Join(src, "p")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// run runs the fixture's test binary with a test log in the package's
// directory and the environment env, and returns the log.
func run(t *testing.T, bin, dir string, env []string) string {
	t.Helper()
	log := filepath.Join(t.TempDir(), "test.log")
	cmd := exec.Command(bin, "-test.testlogfile="+log, "-test.count=1")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the fixture's test failed: %v\n%s", err, out)
	}
	return log
}

func writeFile(t *testing.T, p, body string) { t.Helper(); testmodule.WriteFile(t, p, body) }

// TestWhatATestTouchedIsItsInput: each change to something the test read
// at run time changes the digest of its record, and nothing else does:
// not its temporary files, not the variables the runner gives each run,
// not a secret's value.
func TestWhatATestTouchedIsItsInput(t *testing.T) {
	base := []string{"CLIENTS=1", "API_TOKEN=s3cret-one", "DATABASE_URL=postgres://u:pw-one@db:5432/app", "RUN_ID=r1"}
	tests := []struct {
		name    string
		change  func(t *testing.T, root, outside string) []string // returns the environment after
		changed bool
	}{
		{"nothing", func(*testing.T, string, string) []string { return base }, false},
		{"a fixture in the package directory, not under testdata", func(t *testing.T, root, _ string) []string {
			writeFile(t, filepath.Join(root, "p/fixture.json"), `{"n":2}`)
			return base
		}, true},
		{"a fixture in a subdirectory", func(t *testing.T, root, _ string) []string {
			writeFile(t, filepath.Join(root, "p/migrations/001.sql"), "create table t (n text);\n")
			return base
		}, true},
		{"a new file in a directory the test listed", func(t *testing.T, root, _ string) []string {
			writeFile(t, filepath.Join(root, "p/migrations/002.sql"), "drop table t;\n")
			return base
		}, true},
		{"a file outside the package the test read", func(t *testing.T, root, _ string) []string {
			writeFile(t, filepath.Join(root, "shared/golden.txt"), "other\n")
			return base
		}, true},
		{"the target of a link the test read through", func(t *testing.T, _, outside string) []string {
			writeFile(t, filepath.Join(outside, "real.txt"), "moved on\n")
			return base
		}, true},
		{"a file the test only stat'ed appears", func(t *testing.T, root, _ string) []string {
			writeFile(t, filepath.Join(root, "p/optional.txt"), "here\n")
			return base
		}, true},
		{"a variable the test read", func(*testing.T, string, string) []string {
			return []string{"CLIENTS=4", "API_TOKEN=s3cret-one", "DATABASE_URL=postgres://u:pw-one@db:5432/app", "RUN_ID=r1"}
		}, true},
		{"a variable the test read becomes unset", func(*testing.T, string, string) []string {
			return []string{"API_TOKEN=s3cret-one", "DATABASE_URL=postgres://u:pw-one@db:5432/app", "RUN_ID=r1"}
		}, true},
		{"a connection string's host", func(*testing.T, string, string) []string {
			return []string{"CLIENTS=1", "API_TOKEN=s3cret-one", "DATABASE_URL=postgres://u:pw-one@other:5432/app", "RUN_ID=r1"}
		}, true},
		{"a secret's value alone", func(*testing.T, string, string) []string {
			return []string{"CLIENTS=1", "API_TOKEN=s3cret-two", "DATABASE_URL=postgres://u:pw-two@db:5432/app", "RUN_ID=r1"}
		}, false},
		{"the runner's own variable", func(*testing.T, string, string) []string {
			return []string{"CLIENTS=1", "API_TOKEN=s3cret-one", "DATABASE_URL=postgres://u:pw-one@db:5432/app", "RUN_ID=r2"}
		}, false},
		{"a new file in a directory the test only stat'ed", func(t *testing.T, root, _ string) []string {
			writeFile(t, filepath.Join(root, "p/busy/new.txt"), "x\n")
			return base
		}, false},
		{"a file nobody read", func(t *testing.T, root, _ string) []string {
			writeFile(t, filepath.Join(root, "p/unread.txt"), "x\n")
			return base
		}, false},
	}
	bin := buildFixture(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(root, "go.mod"), "module example.com/m\n\ngo 1.26\n")
			writeFile(t, filepath.Join(root, "p/p_test.go"), fixtureTest)
			writeFile(t, filepath.Join(root, "p/fixture.json"), `{"n":1}`)
			writeFile(t, filepath.Join(root, "p/migrations/001.sql"), "create table t (n int);\n")
			writeFile(t, filepath.Join(root, "shared/golden.txt"), "golden\n")
			writeFile(t, filepath.Join(root, "p/busy/old.txt"), "x\n")
			writeFile(t, filepath.Join(outside, "real.txt"), "real\n")
			if err := os.Symlink(filepath.Join(outside, "real.txt"), filepath.Join(root, "p/linked.txt")); err != nil {
				t.Fatal(err)
			}
			env := append([]string{"OUTSIDE=linked.txt"}, base...)
			paths := touched.Paths{Root: root, Dir: filepath.Join(root, "p"), Ignore: []string{os.TempDir()}, Given: []string{"RUN_ID", "OUTSIDE"}}
			rec, err := touched.ParseFile(run(t, bin, paths.Dir, env), paths)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"p/fixture.json", "p/migrations/001.sql", "shared/golden.txt", "p/linked.txt", "p/migrations"} {
				if !slices.Contains(rec.Open, want) {
					t.Fatalf("the record opens %q, missing %s", rec.Open, want)
				}
			}
			if slices.ContainsFunc(rec.Open, func(s string) bool { return strings.Contains(s, "scratch") }) || slices.Contains(rec.Env, "RUN_ID") {
				t.Fatalf("the record holds the test's own temporary file or the runner's variable: %+v", rec)
			}
			sum := func(env []string) string {
				t.Helper()
				lookup := func(k string) (string, bool) {
					v, ok := "", false
					for _, kv := range append([]string{"OUTSIDE=linked.txt"}, env...) {
						if name, val, _ := strings.Cut(kv, "="); name == k {
							v, ok = val, true
						}
					}
					return v, ok
				}
				s, err := touched.NewInputs(paths, lookup).Sum(rec)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			before := sum(base)
			after := sum(tt.change(t, root, outside))
			if got := before != after; got != tt.changed {
				t.Errorf("digest changed %v, want %v (record %+v)", got, tt.changed, rec)
			}
		})
	}
}

// TestALogThatIsNotWholeIsNoRecord: a missing log, one the testing package
// did not start, and one over the bound are refused, so the run they
// stand for is never reused.
func TestALogThatIsNotWholeIsNoRecord(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		body []byte
	}{
		{"missing", nil},
		{"not a test log", []byte("open /etc/passwd\n")},
		{"over the bound", append([]byte("# test log\n"), make([]byte, touched.MaxLog)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			if tt.body != nil {
				writeFile(t, p, string(tt.body))
			}
			if _, err := touched.ParseFile(p, touched.Paths{Root: dir, Dir: dir}); err == nil {
				t.Error("a record was made of it")
			}
		})
	}
}

// TestACoveredFileIsNoRunTimeInput: a file the build digest covers (the
// registry) is left out of the record, however the test named it.
func TestACoveredFileIsNoRunTimeInput(t *testing.T) {
	root := t.TempDir()
	log := "# test log\nopen ../contested-surfaces.toml\nopen fixture.json\n"
	p := touched.Paths{Root: root, Dir: filepath.Join(root, "p"), Covered: []string{filepath.Join(root, "contested-surfaces.toml")}}
	rec, err := touched.Parse(strings.NewReader(log), p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.Open, []string{"p/fixture.json"}) {
		t.Errorf("opened %q, want only p/fixture.json", rec.Open)
	}
}
