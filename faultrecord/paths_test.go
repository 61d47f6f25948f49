package faultrecord

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestResolveResultsDir(t *testing.T) {
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(mod, "store", "internal", "pg")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	// A directory named go.mod is not a module root.
	if err := os.MkdirAll(filepath.Join(mod, "store", "go.mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	noModule := t.TempDir()

	tests := []struct {
		name    string
		env, wd string
		want    string
		wantErr error
	}{
		{name: "unset: test-results under the module root, not the package", wd: pkg, want: filepath.Join(mod, "test-results")},
		{name: "relative: under the module root", env: "out/results", wd: pkg, want: filepath.Join(mod, "out", "results")},
		{name: "absolute: as is, cleaned", env: "/srv/ci/../ci/results/", wd: pkg, want: "/srv/ci/results"},
		{name: "absolute needs no module", env: "/srv/results", wd: noModule, want: "/srv/results"},
		{name: "at the module root itself", wd: mod, want: filepath.Join(mod, "test-results")},
		{name: "relative without a module", wd: noModule, wantErr: ErrNoModuleRoot},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveResultsDir(tc.env, tc.wd)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("resolveResultsDir = %q, %v; want %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("resolveResultsDir = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestResultsDirFromPackageDir runs the real function from where go test runs it: this
// package's directory. The records must go to the module root, one level up.
func TestResultsDirFromPackageDir(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvResultsDir, "")
	got, err := ResultsDir()
	if err != nil || got != filepath.Join(root, "test-results") {
		t.Errorf("ResultsDir() = %q, %v; want %q", got, err, filepath.Join(root, "test-results"))
	}
	t.Setenv(EnvResultsDir, "/abs/results")
	if got, err := ResultsDir(); err != nil || got != "/abs/results" {
		t.Errorf("ResultsDir() with an absolute env = %q, %v", got, err)
	}
	if got := FaultDir("/abs/results"); got != "/abs/results/fault" {
		t.Errorf("FaultDir = %q", got)
	}
}

func TestRunID(t *testing.T) {
	t.Setenv(EnvRunID, "given-run")
	if got := RunID(); got != "given-run" {
		t.Errorf("RunID() with %s set = %q", EnvRunID, got)
	}
	t.Setenv(EnvRunID, "")
	shape := regexp.MustCompile(`^\d{8}T\d{6}Z-[0-9a-f]{4}$`)
	if got := RunID(); !shape.MatchString(got) {
		t.Errorf("RunID() = %q, want the shape 20261129T101500Z-4f2a", got)
	}
	at := time.Date(2026, 11, 29, 11, 15, 0, 0, time.FixedZone("CET", 3600))
	if got := NewRunID(at); !strings.HasPrefix(got, "20261129T101500Z-") || !shape.MatchString(got) {
		t.Errorf("NewRunID(%v) = %q, want UTC 20261129T101500Z-xxxx", at, got)
	}
}

func TestRecordFileName(t *testing.T) {
	tests := []struct {
		name           string
		run, test, leg string
		wantPrefix     string
	}{
		{name: "plain", run: "20261129T101500Z-4f2a", test: "TestStoreContract/reset", leg: "reset", wantPrefix: "20261129T101500Z-4f2a--TestStoreContract_reset--reset--"},
		{name: "path traversal is flattened", run: "../..", test: "../../etc/passwd", leg: "a/b", wantPrefix: "_._..--_._.._etc_passwd--a_b--"},
		{name: "empty parts", wantPrefix: "_--_--_--"},
		{name: "spaces and quotes", run: "r", test: "TestX/with space 'q'", leg: "burst", wantPrefix: "r--TestX_with_space__q_--burst--"},
		{name: "long test names are cut", run: "r", test: strings.Repeat("T", 500), leg: "l", wantPrefix: "r--" + strings.Repeat("T", maxNamePart) + "--l--"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := recordFileName(tc.run, tc.test, tc.leg)
			b := recordFileName(tc.run, tc.test, tc.leg)
			if a == b {
				t.Errorf("two names for the same record are equal: %q", a)
			}
			if !strings.HasPrefix(a, tc.wantPrefix) {
				t.Errorf("name %q, want prefix %q", a, tc.wantPrefix)
			}
			if strings.ContainsRune(a, '/') || strings.HasPrefix(a, ".") || len(a) > 255 {
				t.Errorf("name %q is not a safe plain file name", a)
			}
			if Classify(a) != KindRecord {
				t.Errorf("name %q is not classified as a record", a)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		want Kind
	}{
		{"20261129T101500Z-4f2a--TestX--reset--0123456789ab.json", KindRecord},
		{"truncated.json", KindRecord},
		{".hidden.json", KindRecord},
		{"fault-report.json", KindReport},
		{".gate-stamp", KindStamp},
		{".record-123456.tmp", KindRecordTemp},
		{".gate-stamp-99.tmp", KindOtherTemp},
		{".fault-report-99.tmp", KindOtherTemp},
		{"README.txt", KindOther},
		{"x.json.bak", KindOther},
		{"other.tmp", KindOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.name); got != tc.want {
				t.Errorf("Classify(%q) = %d, want %d", tc.name, got, tc.want)
			}
		})
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"TestStoreContract/reset": "TestStoreContract_reset",
		"":                        "_",
		".hidden":                 "_hidden",
		"a.b c/d":                 "a.b_c_d",
		"ünïcode":                 "__n__code",
	} {
		if got := SafeName(in); got != want {
			t.Errorf("SafeName(%q) = %q, want %q", in, got, want)
		}
	}
}
