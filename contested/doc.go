// Package contested is what a Go test imports to contest a surface: one
// call starts a fault leg that names the surface and the lever, leases a
// proxy port and creates the proxy, hands the test what it needs (an
// address, a DSN, a seed, an observer), records the fault as armed and, on
// observed evidence only, fired, and cleans up in every case.
//
// A leg's life:
//
//	leg := contested.Start(t, "ledger.store", contested.Reset)
//	pool := leg.Pool(ctx)                 // a pgx pool to the victim database, through the proxy
//	for !done(leg.Done()) {                // the workload runs until the schedule is done
//		leg.Step(ctx)                      // the leg arms and heals its faults on the steps its schedule names
//		_, err := pool.Exec(ctx, ...)      // traffic; socket errors are observed automatically
//		leg.Observe(err)                   // errors the application sees are observed too
//	}
//	... the oracle checks the component kept its promise
//
// The schedule (Leg.Schedule) is drawn from the seed and CONTESTED_LEVEL by
// the lever: on which step each fault is armed, how long it holds, the
// lever's parameters (a reset's direction, the connections an exhaustion
// holds, a burst's plan). A test that must arm at a moment of its own calls
// Arm, then HoldAndHeal or Heal; its faults still take their parameters
// from the schedule.
//
// At the end of the test the leg writes one record per armed fault (schema
// contested/faultrecord@1, see package faultrecord). A fault counts as fired
// only when the injector side and the victim side both saw it land; a leg
// that armed and did not fire fails its test, naming the leg. Deleting the
// proxy and releasing the lease happen at the end of the test even when it
// panics; a process that dies outright leaves its lease and proxy for the
// lease table's reclaim path (TestPanicMidFaultLeavesResidueThatTheReclaimPathReaps).
//
// A workload of several clients names them (Clients) and reaches Postgres
// as each through Client(i): under a lever that strikes some clients only
// (Isolate) each has a proxy of its own, under the others they share the
// leg's one path, so one workload serves every leg. A contract that judges
// what its clients saw records their ops in the leg's history (History,
// Client.Invoke, Client.Record) and holds it against a model of package
// history (Check): the verdict becomes the leg's oracle, and an Illegal one
// fails the test naming each anomaly.
//
// Every seeded choice of a leg (its schedule, burst permutations, the
// test's own draws from Rand) comes from one seed: CONTESTED_SEED when set,
// otherwise a fresh one. Each leg logs CONTESTED_SEED=<n>, its schedule and
// the go test command that replays it (with the level).
//
// A package whose tests start legs runs them through Main:
//
//	func TestMain(m *testing.M) { contested.Main(m) }
//
// or, when it already has a TestMain with a set-up of its own, through Run,
// which returns the exit code instead of exiting:
//
//	func TestMain(m *testing.M) {
//		stop := startQueue()
//		code := contested.Run(m)
//		stop()
//		os.Exit(code)
//	}
package contested
