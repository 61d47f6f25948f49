package faultrecord

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestRecordsCarryNoSecret: a child test process knows the test plane's
// password from its environment (CONTESTED_PG_DSN, in keyword form here,
// and PGPASSWORD); a record whose evidence quotes it, in a shape no DSN
// pattern recognizes, is saved with the password masked and still parses.
func TestRecordsCarryNoSecret(t *testing.T) {
	const dsnPW, envPW = "kw-rec0rd-secret", "env-rec0rd-secret"
	t.Setenv("CONTESTED_PG_DSN", "host=127.0.0.1 port=5432 user=postgres password='"+dsnPW+"' dbname=contested")
	t.Setenv("PGPASSWORD", envPW)
	rec, err := NewRecorder("example.com/ledger", WithResultsDir(t.TempDir()), WithRunID("run-1"))
	if err != nil {
		t.Fatal(err)
	}
	r := sampleRecord()
	r.Evidence.Injector = "server said: " + dsnPW + " rejected"
	r.Evidence.Victim = "dial host=127.0.0.1 password=" + envPW + " failed"
	p, err := rec.Write(r)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{dsnPW, envPW} {
		if strings.Contains(string(b), s) {
			t.Errorf("the record holds the password %q:\n%s", s, b)
		}
	}
	var got Record
	if err := json.Unmarshal(b, &got); err != nil || got.Validate() != nil {
		t.Errorf("the scrubbed record no longer reads: %v %v\n%s", err, got.Validate(), b)
	}
}
