//go:build contested_defect_nofence

package pglock

// Planted defect for the contract tests only; see defects.go.
func init() { noFence = true }
