// Package batterytest gives a test binary one store of test binaries
// (battery.Binaries) for all its tests, as one command has one.
//
// Tests that walk the same fixture module share its test binaries: each
// package is built once per test binary instead of once per test. A
// fixture a test writes into a directory of its own is another module to
// Binaries (the directory is part of every binary's key), so sharing is
// safe as long as no test edits a module another test runs, which is the
// invariant Binaries states for a command.
package batterytest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/contested/contested/internal/battery"
)

var shared struct {
	once sync.Once
	root string
	bins *battery.Binaries
	err  error
}

// Binaries returns the test binary's store, made on first use.
func Binaries(tb testing.TB) *battery.Binaries {
	tb.Helper()
	shared.once.Do(func() {
		if shared.root, shared.err = os.MkdirTemp("", "contested-test-binaries-"); shared.err != nil {
			return
		}
		shared.bins, shared.err = battery.NewBinaries("", battery.InStore(filepath.Join(shared.root, "store")))
	})
	if shared.err != nil {
		tb.Fatalf("test binaries: %v", shared.err)
	}
	return shared.bins
}

// Close removes the store; call it from TestMain after m.Run.
func Close() {
	if shared.bins != nil {
		_ = shared.bins.Close()
	}
	if shared.root != "" {
		_ = os.RemoveAll(shared.root)
	}
}
