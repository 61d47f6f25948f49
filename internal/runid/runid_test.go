package runid

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/envvar"
)

func TestNew(t *testing.T) {
	shape := regexp.MustCompile(`^\d{8}T\d{6}Z-[0-9a-f]{4}$`)
	at := time.Date(2026, 11, 29, 11, 15, 0, 0, time.FixedZone("CET", 3600))
	if got := New(at); !strings.HasPrefix(got, "20261129T101500Z-") || !shape.MatchString(got) || Check(got) != nil {
		t.Errorf("New(%v) = %q, want UTC 20261129T101500Z-xxxx", at, got)
	}
	a, b := Unique("x"), Unique("x")
	if a == b || !strings.HasPrefix(a, "x-") || Check(a) != nil {
		t.Errorf("Unique(x) twice = %q, %q; want distinct valid x-… ids", a, b)
	}
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name, value string
		unset       bool
		wantID      string
		wantShared  bool
		wantErr     bool
	}{
		{name: "given", value: "given-run", wantID: "given-run", wantShared: true},
		{name: "unset: a fresh one", unset: true},
		{name: "set but empty", value: "", wantErr: true},
		{name: "a slash", value: "bad/id", wantErr: true},
		{name: "a leading dash", value: "-lead", wantErr: true},
		{name: "a space", value: "a b", wantErr: true},
		{name: "too long", value: strings.Repeat("r", MaxLen+1), wantErr: true},
		{name: "not ASCII", value: "é", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envvar.RunID, tc.value)
			if tc.unset {
				t.Setenv(envvar.RunID, "")
				unsetenv(t, envvar.RunID)
			}
			id, shared, err := FromEnv()
			switch {
			case tc.wantErr:
				if !errors.Is(err, ErrBad) {
					t.Errorf("FromEnv = %q, %v, %v; want ErrBad", id, shared, err)
				}
			case err != nil || shared != tc.wantShared || Check(id) != nil || (tc.wantID != "" && id != tc.wantID):
				t.Errorf("FromEnv = %q, %v, %v; want %q shared %v", id, shared, err, tc.wantID, tc.wantShared)
			}
		})
	}
}

// unsetenv removes key for the rest of the test (t.Setenv has restored it
// by then).
func unsetenv(t *testing.T, key string) {
	t.Helper()
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}
