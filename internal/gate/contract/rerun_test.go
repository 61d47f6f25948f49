package contract

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/internal/battery"
)

func TestLeafFailures(t *testing.T) {
	res := &battery.Result{Tests: []battery.Test{
		{Package: "a", Name: "TestX", Action: "fail"},
		{Package: "a", Name: "TestX/one", Action: "fail"},
		{Package: "a", Name: "TestX/two", Action: "pass"},
		{Package: "a", Name: "TestXY", Action: "fail"},
		{Package: "a", Name: "TestY", Action: "fail"},
		{Package: "a", Name: "TestYZ", Action: "fail"},
		{Package: "b", Name: "TestX", Action: "fail"},
	}}
	var got []string
	for _, t := range LeafFailures(res) {
		got = append(got, t.ID())
	}
	if diff := cmp.Diff([]string{"a.TestX/one", "a.TestXY", "a.TestY", "a.TestYZ", "b.TestX"}, got); diff != "" {
		t.Errorf("leaf failures (-want +got):\n%s", diff)
	}
}

func TestModulePath(t *testing.T) {
	tests := []struct{ gomod, want string }{
		{"module example.com/m\n\ngo 1.26.0\n", "example.com/m"},
		{"// a comment\ngo 1.26.0\n\nmodule \"example.com/q\" // quoted\n", "example.com/q"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(tt.gomod), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := ModulePath(dir); err != nil || got != tt.want {
			t.Errorf("ModulePath(%q) = %q, %v; want %q", tt.gomod, got, err, tt.want)
		}
	}
	if _, err := ModulePath(t.TempDir()); err == nil {
		t.Error("ModulePath of a directory without go.mod: no error")
	}
}
