//go:build contested_defect_ignorelost

package pglock

// Planted defect for the contract tests only; see defects.go.
func init() { ignoreLost = true }
