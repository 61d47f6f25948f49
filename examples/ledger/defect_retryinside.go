//go:build contested_defect_retryinside

package ledger

// Planted defect for the oracle tests only; see defects.go.
func init() { retryInside = true }
