package battery

import (
	"context"
	"strings"
	"testing"

	"github.com/contested/contested/internal/testmodule"
)

// TestRunScrubsWhatTheTestsPrint: a test that logs its DSN (keyword form,
// from CONTESTED_PG_DSN) and the bare password (as a driver error might)
// reaches neither the event log, nor the progress lines, nor the failure's
// output with the password.
func TestRunScrubsWhatTheTestsPrint(t *testing.T) {
	const pw = "battery-Kw-secret"
	dir := testmodule.Write(t, map[string]string{
		"go.mod": "module example.com/leak\n\ngo 1.24\n",
		"leak/leak_test.go": "package leak\nimport (\"os\"; \"testing\")\n" +
			"func TestLeak(t *testing.T) {\n\tt.Log(\"dsn:\", os.Getenv(\"CONTESTED_PG_DSN\"))\n\tt.Log(\"server: bad secret \" + os.Getenv(\"PGPASSWORD\"))\n\tt.Fail()\n}\n",
	})
	t.Setenv("CONTESTED_PG_DSN", "host=127.0.0.1 user=postgres password='"+pw+"' dbname=contested")
	t.Setenv("PGPASSWORD", pw)
	var progress, events strings.Builder
	res, err := Run(context.Background(), Options{Dir: dir, Out: &progress, Events: &events})
	if err != nil {
		t.Fatal(err)
	}
	failed := res.Failed()
	if len(failed) != 1 || !strings.Contains(failed[0].Output, "password='xxxxx'") {
		t.Fatalf("want TestLeak failed with its masked DSN in its output: %+v", failed)
	}
	for name, s := range map[string]string{"events": events.String(), "progress": progress.String(), "failure output": failed[0].Output} {
		if strings.Contains(s, pw) {
			t.Errorf("the %s hold the password:\n%s", name, s)
		}
	}
}
