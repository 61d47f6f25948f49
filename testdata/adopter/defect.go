//go:build adopter_defect

package stock

// The planted defect: apply a redelivered message again. Only a build with
// -tags adopter_defect has it; the contract must go RED.
func init() { skipDedup = true }
