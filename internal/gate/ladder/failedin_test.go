package ladder

import (
	"testing"

	"github.com/contested/contested/internal/battery"
)

// TestFailedIn reads whether a test failed in the battery it was reported
// from, without running anything: the test or one of its subtests failed
// in its package (the one the id names, else the package of the surface
// that lists it), or that package failed outside any test. A test of
// another package, a test whose name merely starts the same, and a test
// that passed are not this test's failure.
func TestFailedIn(t *testing.T) {
	const adopter, other = "example.com/adopter", "example.com/other"
	fail := func(pkg, name string) battery.Test { return battery.Test{Package: pkg, Name: name, Action: "fail"} }
	tests := []struct {
		name     string
		b        *battery.Result
		pkg      string // the package the test id names, if any
		test     string
		failedIn bool
	}{
		{"no battery", nil, "", "TestStockReport", false},
		{"it failed, the id names its package", &battery.Result{Tests: []battery.Test{fail(adopter, "TestStockReport")}}, adopter, "TestStockReport", true},
		{"it failed, its surface's package", &battery.Result{Tests: []battery.Test{fail(adopter, "TestStockReport")}}, "", "TestStockReport", true},
		{"a subtest of it failed", &battery.Result{Tests: []battery.Test{fail(adopter, "TestStockContract/burst")}}, "", "TestStockContract", true},
		{"it passed", &battery.Result{Tests: []battery.Test{{Package: adopter, Name: "TestStockReport", Action: "pass"}}}, "", "TestStockReport", false},
		{"a test whose name starts the same failed", &battery.Result{Tests: []battery.Test{fail(adopter, "TestStockReportX")}}, "", "TestStockReport", false},
		{"another test failed", &battery.Result{Tests: []battery.Test{fail(adopter, "TestStockContract/burst")}}, "", "TestStockReport", false},
		{"a test of the same name in the package the id does not name", &battery.Result{Tests: []battery.Test{fail(other, "TestStockReport")}}, adopter, "TestStockReport", false},
		{"a test of the same name outside its surface's package", &battery.Result{Tests: []battery.Test{fail(other, "TestStockReport")}}, "", "TestStockReport", false},
		{"its package failed outside any test", &battery.Result{Packages: []battery.Package{{Name: adopter, Action: "fail"}}}, "", "TestStockReport", true},
		{"another package failed outside any test", &battery.Result{Packages: []battery.Package{{Name: other, Action: "fail"}}}, adopter, "TestStockReport", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := fixtureOptions(t)
			if got := failedIn(tt.b, opts, tt.pkg, tt.test); got != tt.failedIn {
				t.Errorf("failedIn(%s in %q) = %v, want %v", tt.test, tt.pkg, got, tt.failedIn)
			}
		})
	}
}
