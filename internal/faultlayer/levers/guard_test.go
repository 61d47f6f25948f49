package levers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/faultlayer/faulttest"
)

// TestTheArmerRefusesACanonicalTestPlane: an armer over a pool whose
// database [guard] canonical_databases lists (in any case) is refused
// before its harness table is created there.
func TestTheArmerRefusesACanonicalTestPlane(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	stock := fmt.Sprintf("stock_%d", rand.Uint32())
	scratchDatabase(t, l.DB(), stock)
	u, _ := url.Parse(l.PostgresDSN)
	u.Path = "/" + stock
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, canonical := range [][]string{{stock}, {strings.ToUpper(stock)}} {
		if _, err := NewPgFaultArmer(ctx, pool, canonical); !errors.Is(err, ErrCanonicalDB) || !strings.Contains(err.Error(), "canonical_databases") {
			t.Errorf("NewPgFaultArmer over %s with canonical %v = %v, want ErrCanonicalDB", stock, canonical, err)
		}
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, harnessTable).Scan(&exists); err != nil || exists {
		t.Errorf("the harness table was created in the canonical database (%v)", err)
	}
}
