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
//	... warm up, then:
//	leg.Arm(ctx)                           // the fault is set up now
//	_, err := pool.Exec(ctx, ...)          // traffic; socket errors are observed automatically
//	leg.Observe(err)                       // errors the application sees are observed too
//	leg.Heal(ctx)                          // the fault is taken away
//	... the oracle checks the component kept its promise
//
// At the end of the test the leg writes one record per armed fault (schema
// contested/faultrecord@1, see package faultrecord). A fault counts as fired
// only when the injector side and the victim side both saw it land; a leg
// that armed and did not fire fails its test, naming the leg. Deleting the
// proxy and releasing the lease happen at the end of the test even when it
// panics; a process that dies outright leaves its lease and proxy for the
// lease table's reclaim path (TestPanicMidFaultLeavesResidueThatTheReclaimPathReaps).
//
// Every seeded choice of a leg (burst permutations, timings) comes from one
// seed: CONTESTED_SEED when set, otherwise a fresh one. Each leg logs
// CONTESTED_SEED=<n> and the go test command that replays it.
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
