package touched_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/contested/contested/internal/testmodule"
	"github.com/contested/contested/internal/touched"
)

// sourceModule is a module whose package p names, in literals, what it
// could read before the test log starts or in a worker.
func sourceModule(t *testing.T) (root string, files []string) {
	t.Helper()
	root = testmodule.Write(t, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.26\n",
		"p/p.go": "package p\n\nimport \"os\"\n\nvar Mode = os.Getenv(\"SHOP_MODE\")\nvar Given = os.Getenv(\"CONTESTED_RUN_ID\")\n" +
			"var Files = []string{\"../config/max_qty\", \"migrations\", \"config/other\", \".\", \"..\", \".git\", \"test-results\", \"absent.txt\", \"/etc/hostname\"}\n",
		"p/p_test.go":               "package p\n\nconst worker = `WORKER_COPIES`\n",
		"p/migrations/001.sql":      "create table t ();\n",
		"p/notes.txt":               "not named\n",
		"config/max_qty":            "10\n",
		"config/other":              "x\n",
		"test-results/fault/x.json": "{}\n",
		".git/HEAD":                 "ref: refs/heads/main\n",
	})
	if err := os.Symlink(filepath.Join(root, "p", "migrations"), filepath.Join(root, "p", "migrations", "loop")); err != nil {
		t.Fatal(err)
	}
	return root, []string{"p/p.go", "p/p_test.go", "p/testdata/"}
}

// TestSourceNamesWhatTheLogCannotSee: the variables and the module's paths
// a package's literals name are its inputs (a directory with all under
// it, through a link once); the runner's variables, the module root, a
// directory holding the package, .git, ignored directories, absolute and
// absent paths are not.
func TestSourceNamesWhatTheLogCannotSee(t *testing.T) {
	root, files := sourceModule(t)
	p := touched.Paths{Root: root, Dir: filepath.Join(root, "p"), Given: []string{"CONTESTED_RUN_ID"}, Ignore: []string{filepath.Join(root, "test-results")}}
	rec, err := touched.NewSource().Record(p, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SHOP_MODE", "WORKER_COPIES"} {
		if !slices.Contains(rec.Env, want) {
			t.Errorf("Env %v lacks %s", rec.Env, want)
		}
	}
	if slices.Contains(rec.Env, "CONTESTED_RUN_ID") {
		t.Errorf("Env %v holds a variable the runner gives", rec.Env)
	}
	for _, want := range []string{"config/max_qty", "config/other", "p/migrations", "p/migrations/001.sql", "p/migrations/loop"} {
		if !slices.Contains(rec.Open, want) {
			t.Errorf("Open %v lacks %s", rec.Open, want)
		}
	}
	for _, bad := range []string{".", "p", "p/notes.txt", ".git", ".git/HEAD", "test-results", "test-results/fault/x.json", "p/absent.txt", "/etc/hostname", "p/migrations/loop/001.sql"} {
		if slices.Contains(rec.Open, bad) {
			t.Errorf("Open %v holds %s", rec.Open, bad)
		}
	}
}

// TestASourceRecordDigestsAsTheFilesAre: a change to a file a literal
// names, or a variable it names, changes the record's sum.
func TestASourceRecordDigestsAsTheFilesAre(t *testing.T) {
	root, files := sourceModule(t)
	p := touched.Paths{Root: root, Dir: filepath.Join(root, "p")}
	rec, err := touched.NewSource().Record(p, files)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	sum := func() string {
		s, err := touched.NewInputs(p, lookup).Sum(rec)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := sum()
	env["SHOP_MODE"] = "legacy"
	if sum() == before {
		t.Error("a variable the source names changed, and the sum did not")
	}
	delete(env, "SHOP_MODE")
	testmodule.WriteFile(t, filepath.Join(root, "config", "max_qty"), "-1\n")
	if sum() == before {
		t.Error("a file the source names changed, and the sum did not")
	}
	testmodule.WriteFile(t, filepath.Join(root, "config", "max_qty"), "10\n")
	testmodule.WriteFile(t, filepath.Join(root, "p", "migrations", "002.sql"), "drop table t;\n")
	if sum() == before {
		t.Error("a file appeared in a directory the source names, and the sum did not change")
	}
}

// TestASourceNamingTooMuchIsRefused: a literal naming a directory of more
// entries than a record holds makes the package unreusable, not silently
// partly recorded.
func TestASourceNamingTooMuchIsRefused(t *testing.T) {
	root := testmodule.Write(t, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.26\n",
		"p/p.go": "package p\n\nconst Corpus = \"corpus\"\n",
	})
	if err := os.MkdirAll(filepath.Join(root, "p", "corpus"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range touched.MaxSourcePaths + 1 {
		if err := os.WriteFile(filepath.Join(root, "p", "corpus", fmt.Sprintf("c%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := touched.NewSource().Record(touched.Paths{Root: root, Dir: filepath.Join(root, "p")}, []string{"p/p.go"})
	if !errors.Is(err, touched.ErrTooWide) {
		t.Errorf("Record = %v; want ErrTooWide", err)
	}
}

// TestMergeIsTheUnion: merged records hold each name once, and a path
// opened in one is not also stat'ed.
func TestMergeIsTheUnion(t *testing.T) {
	a := touched.Record{Env: []string{"A", "B"}, Open: []string{"x"}, Stat: []string{"y"}}
	b := touched.Record{Env: []string{"B", "C"}, Open: []string{"y"}}
	m := a.Merge(b)
	if !slices.Equal(m.Env, []string{"A", "B", "C"}) || !slices.Equal(m.Open, []string{"x", "y"}) || len(m.Stat) != 0 {
		t.Errorf("Merge = %+v", m)
	}
}
