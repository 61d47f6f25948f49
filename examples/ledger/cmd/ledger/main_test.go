package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/examples/ledger"
)

func TestDSNFromFile(t *testing.T) {
	dir := t.TempDir()
	private := filepath.Join(dir, "private.dsn")
	os.WriteFile(private, []byte("postgres://svc:pw@h/ledger\n"), 0o600)
	shared := filepath.Join(dir, "shared.dsn")
	os.WriteFile(shared, []byte("postgres://svc:pw@h/ledger\n"), 0o644)
	empty := filepath.Join(dir, "empty.dsn")
	os.WriteFile(empty, []byte("\n"), 0o600)
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{"a private file", []string{"work", "-dsn-file", private, "-name", "r1"}, []string{"work", "-name", "r1"}, ""},
		{"with =", []string{"work", "--dsn-file=" + private}, []string{"work"}, ""},
		{"no -dsn-file", []string{"work", "-dsn", "x"}, []string{"work", "-dsn", "x"}, ""},
		{"a file others may read", []string{"work", "-dsn-file", shared}, nil, "chmod 600"},
		{"an empty file", []string{"work", "-dsn-file", empty}, nil, "is empty"},
		{"a missing file", []string{"work", "-dsn-file", filepath.Join(dir, "nope")}, nil, "no such file"},
		{"no path", []string{"work", "-dsn-file"}, nil, "needs a path"},
		{"both -dsn and -dsn-file", []string{"work", "-dsn", "x", "-dsn-file", private}, nil, "not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(ledger.EnvDSN, "")
			got, err := dsnFromFile(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("dsnFromFile(%q) = %q, %v; want %q", tt.args, got, err, tt.want)
			}
			if slices.Contains(tt.args, "-dsn") {
				return
			}
			if dsn := os.Getenv(ledger.EnvDSN); dsn != "postgres://svc:pw@h/ledger" {
				t.Errorf("%s = %q", ledger.EnvDSN, dsn)
			}
		})
	}
}
