package leasetable_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/contested/contested/contested"
)

// TestMain runs the package's tests, and in a worker process the test binary plays a lease
// holder (the role "lease-holder", which contested.TestBinary("lease-holder") starts).
func TestMain(m *testing.M) {
	contested.Main(m, contested.Role("lease-holder", func(ctx context.Context, _ []string) error {
		if code := holderProcess(ctx); code != 0 {
			return fmt.Errorf("the lease holder exited with status %d", code)
		}
		return nil
	}))
}
