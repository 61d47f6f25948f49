//go:build contested_defect_flaky

package ledger

import "time"

// Planted defect for the oracle tests only; see defects.go. One process in three, by the
// clock.
func init() { flaky = time.Now().UnixNano()%3 == 0 }
