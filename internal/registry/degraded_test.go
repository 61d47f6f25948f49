package registry

import (
	"strings"
	"testing"
	"time"
)

// TestDegradedTable: the [degraded] table is optional (the ledger's front
// by default), read over its defaults, and every bad value is an error that
// names its line.
func TestDegradedTable(t *testing.T) {
	const head = "schema = 1\n[[surface]]\nid = \"s\"\nclass = \"ux\"\nowner = \"o\"\nbehavior = \"b\"\noracle = \"o\"\nlegs = [\"reset\"]\ntests = [\"TestX\"]\n"
	tests := []struct {
		name, toml, wantErr string
		check               func(t *testing.T, d Degraded)
	}{
		{name: "absent takes the defaults", toml: head, check: func(t *testing.T, d Degraded) {
			if d.Build != "./examples/ledger/cmd/ledger" || d.Timeout != time.Second || d.Line != 0 {
				t.Errorf("defaults: %+v", d)
			}
		}},
		{name: "overrides", toml: head + "[degraded]\nbuild = \"./cmd/web\"\ntimeout = \"2s\"\nrun = [\"serve\", \"{dsn}\", \"-x\", \"-x\"]\naccounts = [\"a\", \"b\"]\n", check: func(t *testing.T, d Degraded) {
			if d.Build != "./cmd/web" || d.Timeout != 2*time.Second || len(d.Run) != 4 || d.Accounts != [2]string{"a", "b"} || d.Line != 10 {
				t.Errorf("overrides: %+v", d)
			}
		}},
		{name: "unknown key", toml: head + "[degraded]\nbiuld = \"x\"\n", wantErr: ":11:"},
		{name: "run without dsn", toml: head + "[degraded]\ndsn_env = \"\"\nrun = [\"web\"]\n", wantErr: "must pass {dsn}"},
		{name: "dsn_env not a name", toml: head + "[degraded]\ndsn_env = \"LEDGER DSN\"\n", wantErr: "not an environment variable"},
		{name: "timeout not a duration", toml: head + "[degraded]\ntimeout = \"soon\"\n", wantErr: "not a duration"},
		{name: "timeout out of bounds", toml: head + "[degraded]\ntimeout = \"1m\"\n", wantErr: "outside"},
		{name: "applied not a select", toml: head + "[degraded]\napplied = \"DELETE FROM postings WHERE id = $1\"\n", wantErr: "one SELECT"},
		{name: "balance with two statements", toml: head + "[degraded]\nbalance = \"SELECT 1 WHERE $1 = ''; DROP TABLE x\"\n", wantErr: "without ';'"},
		{name: "one account", toml: head + "[degraded]\naccounts = [\"a\"]\n", wantErr: "exactly two"},
		{name: "build with spaces", toml: head + "[degraded]\nbuild = \"./a ./b\"\n", wantErr: "one Go package"},
		{name: "setup not an array", toml: head + "[degraded]\nsetup = \"migrate\"\n", wantErr: "array of strings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse("reg.toml", []byte(tt.toml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, r.Degraded)
		})
	}
}

// TestThisRepositoryRegistersItsWebFront: the repository's own registry
// reads, with the web surface of class ux and the [degraded] table.
func TestThisRepositoryRegistersItsWebFront(t *testing.T) {
	r, err := Load("../../contested-surfaces.toml")
	if err != nil {
		t.Fatal(err)
	}
	if r.Degraded.Line == 0 || r.Degraded.Build != "./examples/ledger/cmd/ledger" {
		t.Errorf("[degraded] = %+v", r.Degraded)
	}
	s, ok := r.SurfaceForTest("TestDegradedStage/submit/reset")
	if !ok || s.Class != "ux" {
		t.Errorf("TestDegradedStage maps to %+v, %v; want the ux surface", s, ok)
	}
}
