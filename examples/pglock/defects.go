package pglock

// Planted defects. Each switch is off in every normal build. A file behind a test-only build
// tag (defect_*.go, tag contested_defect_*) turns one on in init, so that the battery can
// prove the contract meant to catch it really does (defects_test.go runs the contract with the
// tag and expects it RED). No flag, variable or environment setting reaches them.
var (
	// noFence makes Do act without any check: it neither asks whether the lease is held nor
	// takes the lease row in its transaction, so a holder cut off past its TTL keeps writing
	// once it can reach the database again, while another client holds the lock
	// (contested_defect_nofence). The isolate leg must go RED: acted after loss.
	noFence bool
	// ignoreLost makes the heartbeat ignore a lost lease: a renewal that fails or finds the
	// lease gone does not end it, and Held stays true, so a holder cut off keeps acting
	// outside the database while another client holds the lock
	// (contested_defect_ignorelost). The isolate leg must go RED: acted after loss.
	ignoreLost bool
)
