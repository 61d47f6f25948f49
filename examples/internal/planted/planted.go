// Package planted runs a reference service's contract built with a planted defect's test-only
// build tag, for the defect tests that prove a contract goes RED on the defect it is meant to
// catch.
package planted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultdir"
)

// Run runs one contract leg (run, a -run pattern, in pkg) with go test built with tag, at
// level with seed, in the module at root, with env added; it returns the output and go test's
// error.
func Run(ctx context.Context, goBin, root, tag, pkg, run string, seed int64, level int, env []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, goBin, "test", "-count=1", "-v", "-tags", tag, "-run", run, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, fmt.Sprintf("CONTESTED_SEED=%d", seed), fmt.Sprintf("CONTESTED_LEVEL=%d", level))
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.Bytes(), err
}

// FiredRecord reports whether the records under results hold a fired fault of lever for test.
func FiredRecord(t testing.TB, results, test, lever string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(faultdir.Of(results), "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r faultrecord.Record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if r.Test == test && r.Leg == lever && r.Fired {
			return true
		}
	}
	return false
}

// ModuleRoot is the directory holding go.mod, where go test takes package patterns from.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.mod above the working directory")
		}
	}
}

// Tail keeps the end of a long output.
func Tail(b []byte) string {
	const n = 6000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
