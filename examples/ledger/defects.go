package ledger

// Planted defects. Each switch is off in every normal build. A file behind a test-only build
// tag (defect_*.go, tag contested_defect_*) turns one on in init, so that the battery can
// prove the oracle meant to catch it really does (defects_test.go runs the contract with the
// tag and expects it RED). No flag, variable or environment setting reaches them.
var (
	// skipIdempotency applies a transfer again when its id was already decided
	// (contested_defect_noidempotency): exactly-once must go RED under a burst.
	skipIdempotency bool
	// splitTransfer debits and credits in two statements, so two transactions outside a
	// batch (contested_defect_nonatomic): conservation must go RED under reset.
	splitTransfer bool
	// ackBeforeApply commits a batch's acknowledgement before applying it
	// (contested_defect_ackbeforeapply): no-lost-ack must go RED when a worker is killed.
	ackBeforeApply bool
)
