package ledger

// Planted defects. Each switch is off in every normal build. A file behind a test-only build
// tag (defect_*.go, tag contested_defect_*) turns one on in init, so that the battery can
// prove the oracle meant to catch it really does (defects/defects_test.go runs the contract with the
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
	// retryInside retries a transfer whose outcome is unknown inside Store.Transfer, and takes
	// its own retry's Duplicate for "another client decided this id": Rejected
	// (contested_defect_retryinside). It fails only on some schedules: after an upstream reset
	// the first attempt never reached the server and the retry decides the transfer truly;
	// after a downstream reset the server applied the first attempt and only its answer was
	// lost, and the client hears Rejected for a transfer that moved money. Exactly-once must go
	// RED on a seed whose reset schedule resets downstream, and only there.
	retryInside bool
	// flaky answers a rejected transfer as applied in one process out of three, chosen by the
	// clock when the process starts, never by the seed (contested_defect_flaky): a truly
	// nondeterministic defect, which a rerun with the same seed reproduces only by chance.
	flaky bool
	// webNewKey makes the web front, on a submission whose outcome is unknown, also retry the
	// transfer once with a NEW idempotency key, repeated until the backend answers
	// (contested_defect_webnewkey): when the first attempt had landed, the money moves twice.
	// The web tests' reset and slow submissions must go RED.
	webNewKey bool
	// webErrorPage makes the web front answer a 500 error page when the backend times out on
	// GET / (contested_defect_weberror), instead of the page with the slow banner. The web
	// tests' slow page must go RED.
	webErrorPage bool
)
