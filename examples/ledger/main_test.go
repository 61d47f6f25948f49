package ledger_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/examples/ledger"
)

// TestMain runs the package's tests, and in a worker process the test binary plays cmd/ledger
// (the role "ledger", which contested.TestBinary("ledger", args...) starts).
func TestMain(m *testing.M) {
	contested.Main(m, contested.Role("ledger", ledgerCommand))
}

// ledgerCommand is the test binary playing cmd/ledger: the same ledger.Main, in a process of
// its own that a crash-and-resume leg can kill.
func ledgerCommand(ctx context.Context, args []string) error {
	if code := ledger.Main(ctx, args, os.Stdout, os.Stderr); code != 0 {
		return fmt.Errorf("ledger %v: exit status %d", args, code)
	}
	return nil
}
