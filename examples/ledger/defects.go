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
	// lockLost reads the balances without FOR UPDATE, decides in Go and writes the balances
	// it computed (contested_defect_lostlock): a check-then-act race that loses concurrent
	// updates; conservation, the journal and linearizability must go RED under reset.
	lockLost bool
	// rejectedAsApplied answers Applied to the client for a transfer the ledger rejected
	// (contested_defect_rejectedasapplied): no-lost-ack and linearizability must go RED as
	// soon as the workload reaches insufficient funds.
	rejectedAsApplied bool
)
