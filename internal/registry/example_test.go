package registry_test

import (
	"errors"
	"fmt"

	"github.com/contested/contested/internal/registry"
)

func ExampleLoad() {
	reg, err := registry.Load("testdata/good.toml")
	if err != nil {
		fmt.Println(err)
		return
	}
	s, ok := reg.SurfaceForTest("TestStoreContract/reset/seed=3")
	fmt.Println(ok, s.ID, s.Class, s.Owner, s.Legs)
	fmt.Printf("declared at %s:%d\n", reg.Path, s.Line)
	fmt.Printf("hardening %d seeds; release not provided: %q\n", s.Budget.Hardening.Seeds, s.Budget.Release.NotProvided)

	// A bad registry reports every problem at once, each at its position.
	_, err = registry.Load("testdata/bad-unknown-lever.toml")
	fmt.Println(errors.Is(err, registry.ErrInvalid))
	var list registry.ErrorList
	if errors.As(err, &list) {
		for _, p := range list {
			fmt.Printf("line %d, column %d\n", p.Line, p.Column)
		}
	}
	// Output:
	// true ledger.store store ledger-team [reset confirm-timeout]
	// declared at testdata/good.toml:11
	// hardening 3 seeds; release not provided: "no soak rig yet"
	// true
	// line 11, column 3
	// line 12, column 3
	// line 13, column 3
}
