//go:build contested_defect_noidempotency

package ledger

// Planted defect for the oracle tests only; see defects.go.
func init() { skipIdempotency = true }
