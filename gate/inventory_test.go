package gate

import (
	"context"
	"errors"
	"testing"
)

// TestAnInventoryThatFailedProvesNoSelfTestPresent: go test -list can print names and still
// fail (a package that does not build): the names it did print prove nothing, so phase 6 fails
// and no self-test is reported present.
func TestAnInventoryThatFailedProvesNoSelfTestPresent(t *testing.T) {
	dir := layout(t, fixture{sets: []string{"good"}, stamp: true})
	opts := baseOptions(dir)
	opts.Inventory = func(context.Context) ([]string, error) {
		return fullInventory, errors.New("go test -list: example.com/m/store: build failed")
	}
	rep, err := Verify(t.Context(), opts)
	if !errors.Is(err, ErrRefused) || rep.Phases[5].OK {
		t.Fatalf("err = %v, phase 6 ok %v; want a refusal on phase 6", err, rep.Phases[5].OK)
	}
	for _, s := range rep.SelfTests {
		if s.Present {
			t.Errorf("self-test %s reported present by an inventory that failed", s.Name)
		}
	}
	if len(rep.SelfTests) != len(selfTests) {
		t.Errorf("self_tests = %+v, want every pinned self-test listed", rep.SelfTests)
	}
}
