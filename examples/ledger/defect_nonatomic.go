//go:build contested_defect_nonatomic

package ledger

// Planted defect for the oracle tests only; see defects.go.
func init() { splitTransfer = true }
