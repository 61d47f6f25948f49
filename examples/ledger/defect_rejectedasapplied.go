//go:build contested_defect_rejectedasapplied

package ledger

// Planted defect for the oracle tests only; see defects.go.
func init() { rejectedAsApplied = true }
