//go:build contested_defect_lostlock

package ledger

// Planted defect for the oracle tests only; see defects.go.
func init() { lockLost = true }
