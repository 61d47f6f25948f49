package contested_test

import (
	"fmt"
	"os"
	"testing"

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

// A package whose tests start legs and need no set-up of their own: Main
// is its whole TestMain, func TestMain(m *testing.M) { contested.Main(m) }.
func ExampleMain() {
	var m *testing.M // the one go test hands to TestMain
	contested.Main(m)
}

// A package that already has a TestMain (here it starts a queue its tests
// use) calls Run where it called m.Run: the legs' fault layer is torn down
// when Run returns, then the package's own tear-down runs, then TestMain
// exits with the tests' code.
func ExampleRun() {
	var m *testing.M // the one go test hands to TestMain
	stop, err := startQueue()
	if err != nil {
		fmt.Fprintln(os.Stderr, "set-up:", err)
		os.Exit(1)
	}
	code := contested.Run(m)
	stop()
	os.Exit(code)
}

// startQueue stands for a package's own set-up.
func startQueue() (stop func(), err error) { return func() {}, nil }
