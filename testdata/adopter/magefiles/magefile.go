//go:build mage

// The adopter's magefile: contested's targets, imported, under their
// hyphenated names.
package main

import (
	//mage:import
	"github.com/contested/contested/magefiles/targets"
)

var Aliases = map[string]interface{}{
	"fault-preflight": targets.FaultPreflight,
	"program-gate":    targets.ProgramGate,
	"cluster-tests":   targets.ClusterTests,
}
