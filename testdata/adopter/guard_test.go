package stock

import (
	"testing"

	"github.com/contested/contested/contested"
)

// TestGuardRefusesTheStockDatabase is the toolkit's guard self-test under
// this module's registry: no leg may ever arm against the stock database
// ([guard] canonical_databases), the server's own databases or one the
// harness did not create. It is pinned in [gate] self_tests.
func TestGuardRefusesTheStockDatabase(t *testing.T) { contested.GuardSelfTest(t) }
