//go:build contested_defect_weberror

package ledger

// Planted defect for the web tests only; see defects.go.
func init() { webErrorPage = true }
