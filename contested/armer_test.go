package contested

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/contested/contested/internal/faultlayer/faulttest"
)

// TestLegArmerGuardsTheRegistrysCanonicalDatabases: the armer every leg
// shares refuses the databases the registry's [guard] canonical_databases
// names (the armer's own guard is tested in internal/faultlayer/levers).
func TestLegArmerGuardsTheRegistrysCanonicalDatabases(t *testing.T) {
	l := faulttest.Layer(t)
	reg, err := loadRegistry()
	if err != nil {
		t.Fatal(err)
	}
	a, err := armerFor(context.Background(), l, reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range reg.Guard.CanonicalDatabases {
		if err := a.Guard(context.Background(), db); !errors.Is(err, ErrCanonicalDB) || !strings.Contains(err.Error(), "is canonical") {
			t.Errorf("Guard(%q) = %v, want ErrCanonicalDB: canonical", db, err)
		}
	}
	if len(reg.Guard.CanonicalDatabases) == 0 {
		t.Fatal("the test registry declares no canonical database; the test would prove nothing")
	}
}
