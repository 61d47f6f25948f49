//go:build mage

// contested tells you whether your services survive adversity: fault legs
// through a real Toxiproxy and Postgres, a record of every fault armed and
// fired, a gate that refuses a green run without faults, and an arbitration
// ladder that gives every failure an owner and an action.
package main

import (
	//mage:import
	"github.com/contested/contested/magefiles/targets"
)

// Aliases gives the targets the hyphenated names the project documents.
var Aliases = map[string]interface{}{
	"fault-preflight": targets.FaultPreflight,
	"program-gate":    targets.ProgramGate,
	"cluster-tests":   targets.ClusterTests,
}
