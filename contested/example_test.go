package contested_test

import (
	"fmt"

	"github.com/contested/contested/contested"
)

// A burst's delivery order is a pure function of the seed: the same seed
// replays the same duplicates and reorderings.
func ExamplePlan() {
	a := contested.Plan(42, 20, contested.BurstPlan{})
	b := contested.Plan(42, 20, contested.BurstPlan{})
	fmt.Println(len(a) >= 20, fmt.Sprint(a) == fmt.Sprint(b))
	// Output: true true
}

// The replay command reruns exactly one test, anchored at every level,
// with the seed the failing run used.
func ExampleReplayCommand() {
	fmt.Println(contested.ReplayCommand(7, "./examples/ledger", "TestConsumerContract/burst"))
	// Output: CONTESTED_SEED=7 go test ./examples/ledger -run '^TestConsumerContract$/^burst$' -count=1
}
