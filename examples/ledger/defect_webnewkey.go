//go:build contested_defect_webnewkey

package ledger

// Planted defect for the web tests only; see defects.go.
func init() { webNewKey = true }
