package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/contested/contested/internal/gotest"
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

// TestAnInventoryReadPastASyntaxErrorStillProvesWhatItFound: a test file
// that does not parse (in an unrelated package) does not refuse phase 6
// when every self-test was found elsewhere; a self-test not found may sit
// in that file, and the detail says so.
func TestAnInventoryReadPastASyntaxErrorStillProvesWhatItFound(t *testing.T) {
	unparsed := fmt.Errorf("%w: %w (1)\nparse broken/b_test.go: broken/b_test.go:9:3: expected '}'", gotest.ErrList, gotest.ErrUnparsed)
	tests := []struct {
		name   string
		names  []string
		ok     bool
		detail string
	}{
		{"every self-test found", fullInventory, true, "some test files do not parse"},
		{"one not found", renamedInventory, false, "does not parse (fix it): "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := layout(t, fixture{sets: []string{"good"}, stamp: true})
			opts := baseOptions(dir)
			opts.Inventory = func(context.Context) ([]string, error) { return tt.names, unparsed }
			rep, _ := Verify(t.Context(), opts)
			p := rep.Phases[5]
			if p.OK != tt.ok || !strings.Contains(p.Detail, tt.detail) {
				t.Errorf("phase 6 ok %v, detail %q; want ok %v and %q", p.OK, p.Detail, tt.ok, tt.detail)
			}
		})
	}
}
