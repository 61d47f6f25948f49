package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEveryRegistryPathStaysInTheModule: a surface's package, [cluster]
// package and [degraded] build that would leave the module (absolute,
// climbing out with "..", read as a flag, holding a space, a backslash or
// a control character) are errors naming the file and line; the module's
// own packages (".", "./dir", an import path, and for a surface "./...")
// load.
func TestEveryRegistryPathStaysInTheModule(t *testing.T) {
	bad := []string{"/etc", "../../..", "../../../../etc", "..", "./a/../../b", "./a/..", "a/../../etc", "-exec=evil", `.\x`, "./a b", "./a\nb", "./a/./b", ".//a", "x/../.."}
	good := []string{".", "./examples/ledger", "example.com/m/store", "./cmd/web"}
	keys := []struct {
		name string
		doc  func(v string) string
		tree bool
	}{
		{"a surface's package", func(v string) string { return "schema = 1\n" + minimal + fmt.Sprintf("package = %q\n", v) }, true},
		{"[cluster] package", func(v string) string {
			return "schema = 1\n" + minimal + fmt.Sprintf("[cluster]\npackage = %q\ntest = \"TestA\"\n", v)
		}, false},
		{"[degraded] build", func(v string) string { return "schema = 1\n" + minimal + fmt.Sprintf("[degraded]\nbuild = %q\n", v) }, false},
	}
	for _, k := range keys {
		for _, v := range bad {
			t.Run(k.name+" "+v, func(t *testing.T) {
				_, err := Parse("reg.toml", []byte(k.doc(v)))
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "reg.toml:1") {
					t.Errorf("%s = %q: %v; want an error naming reg.toml and its line", k.name, v, err)
				}
			})
		}
		vals := good
		if k.tree {
			vals = append(vals, "./...", "./examples/...")
		}
		for _, v := range vals {
			t.Run(k.name+" "+v, func(t *testing.T) {
				if _, err := Parse("reg.toml", []byte(k.doc(v))); err != nil {
					t.Errorf("%s = %q: %v; want it accepted", k.name, v, err)
				}
			})
		}
	}
}

// TestARegistryThatIsNoFileIsRefusedAtOnce: a FIFO or a device named as
// the registry is refused without being waited on or read.
func TestARegistryThatIsNoFileIsRefusedAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "reg.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, os.DevNull, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { _, err := Load(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("Load(%s) = %v; want it refused as no regular file", path, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("Load(%s) waited on it", path)
		}
	}
}
