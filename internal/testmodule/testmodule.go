// Package testmodule writes throwaway Go modules for tests of code that
// runs the go command against a module.
package testmodule

import (
	"os"
	"path/filepath"
	"testing"
)

// Write writes files (path → contents) into a fresh temporary directory
// and returns it. Include a go.mod to make it a module.
func Write(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	for name, body := range files {
		WriteFile(tb, filepath.Join(dir, name), body)
	}
	return dir
}

// WriteFile writes body to the file at path, making its directories.
func WriteFile(tb testing.TB, path, body string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
}
