package contested

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/contested/contested/internal/dbguard"
	"github.com/contested/contested/internal/faultlayer/faulttest"
)

// builtinDatabases are the server's own databases, which no leg may ever
// arm against whatever the registry says.
var builtinDatabases = dbguard.Maintenance

// GuardSelfTest proves, against the fault layer the legs use, that
// PgFaultArmer's guard refuses every database a leg must never arm
// against under this module's registry, and allows the harness's own
// victim. Refused: each database in the registry's [guard]
// canonical_databases, the server's built-in databases, the test plane's
// own database, and a database the harness did not create. It sends no
// statement to a refused database.
//
// It is the toolkit's guard self-test for adopters: call it from a test of
// your own and pin that test in [gate] self_tests, so that deleting or
// renaming it refuses the gate, and so that a registry edit that drops a
// canonical database, or a guard that stops refusing one, fails the
// battery:
//
//	func TestGuardRefusesOurDatabases(t *testing.T) { contested.GuardSelfTest(t) }
func GuardSelfTest(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	reg, err := loadRegistry()
	if err != nil {
		tb.Fatalf("contested: guard self-test: %v", err)
	}
	l := faulttest.Layer(tb)
	a, err := armerFor(ctx, l, reg)
	if err != nil {
		tb.Fatalf("contested: guard self-test: %v", err)
	}
	victim, err := a.CreateVictim(ctx, tb.Name())
	if err != nil {
		tb.Fatalf("contested: guard self-test: %v", err)
	}
	tb.Cleanup(func() { a.DropVictim(context.WithoutCancel(ctx), victim) })
	if len(reg.Guard.CanonicalDatabases) == 0 {
		env, _ := processEnv()
		tb.Logf("contested: %s has no [guard] canonical_databases: list the databases no leg may ever touch there (your service's real ones)", env.Registry)
	}
	proveGuard(ctx, tb, a.Guard, guardCase{
		canonical: reg.Guard.CanonicalDatabases,
		testPlane: l.DB().Config().ConnConfig.Database,
		victim:    victim.Database(),
	})
}

// guardCase is what proveGuard checks a guard against.
type guardCase struct {
	canonical []string // the registry's [guard] canonical_databases
	testPlane string   // the test plane's own database
	victim    string   // a victim database the harness created
}

// proveGuard reports, on tb, every database the guard should refuse and
// allows, and the harness's victim if it refuses it.
func proveGuard(ctx context.Context, tb testing.TB, guard func(context.Context, string) error, c guardCase) {
	tb.Helper()
	var b [4]byte
	rand.Read(b[:])
	outsider := "not_the_harness_" + hex.EncodeToString(b[:])
	refuse := append(append(append([]string(nil), c.canonical...), builtinDatabases...), c.testPlane, outsider)
	for _, db := range refuse {
		if err := guard(ctx, db); !errors.Is(err, ErrCanonicalDB) {
			tb.Errorf("contested: the guard does not refuse database %q (err: %v): a leg could arm against it", db, err)
		}
	}
	if err := guard(ctx, c.victim); err != nil {
		tb.Errorf("contested: the guard refuses the harness's own victim %q: %v", c.victim, err)
	}
}
