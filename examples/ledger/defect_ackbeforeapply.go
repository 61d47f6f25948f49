//go:build contested_defect_ackbeforeapply

package ledger

// Planted defect for the oracle tests only; see defects.go.
func init() { ackBeforeApply = true }
