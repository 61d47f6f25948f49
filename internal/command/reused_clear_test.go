package command

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
)

// TestARunThatReusesEverythingKeepsNoEarlierEvidence: a GREEN run that
// reused every package and surface and ran nothing still leaves the
// results directory to itself. The RED run before it left fault records,
// a fault report, junit, go test's events and an issue body; afterwards
// none of them is where a report or CI's upload would find it, and the
// pages are under previous/<the RED run's id>/, not the GREEN one's.
func TestARunThatReusesEverythingKeepsNoEarlierEvidence(t *testing.T) {
	root := t.TempDir()
	fault := faultdir.Of(root)
	earlier := map[string]string{
		"validate.json":                             `{"run_id":"red-run","green":false}`,
		"ladder/TestX_reset-1.md":                   "fix: x: reset leg is FAIL-reproducible",
		"ladder/reruns/TestX_reset.json":            "{}",
		"battery/junit.xml":                         `<testsuites failures="2"></testsuites>`,
		"battery/go-test.json":                      "{}",
		"fault/fault-report.html":                   "<html>RED</html>",
		"fault/fault-report.json":                   "{}",
		"fault/red-run--TestX_reset--reset--1.json": `{"schema":"contested/faultrecord@1"}`,
	}
	for rel, body := range earlier {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !faultdir.Is(fault) {
		t.Fatalf("%s is not the fault directory", fault)
	}
	v := &validation{
		out:   io.Discard,
		reg:   &registry.Registry{},
		env:   runenv.Env{ResultsDir: rundir.Dir(root), RunID: "green-run"},
		rep:   &ValidateReport{RunID: "green-run"},
		reuse: &reuse{rep: &ReuseReport{On: true, All: true}},
	}
	if err := v.finishReused(time.Now()); err != nil {
		t.Fatal(err)
	}
	for rel := range earlier {
		if rel == "validate.json" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, rel)); err == nil {
			t.Errorf("%s of the earlier run is still beside this run's evidence", rel)
		}
	}
	for _, rel := range []string{"ladder/TestX_reset-1.md", "battery/junit.xml"} {
		if _, err := os.Stat(filepath.Join(root, "previous", "red-run", rel)); err != nil {
			t.Errorf("%s was not set aside under previous/red-run/: %v", rel, err)
		}
	}
}
