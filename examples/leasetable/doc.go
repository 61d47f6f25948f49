// Package leasetable holds the contested contract of the fault layer's own port-lease table
// (fault_port_leases, package internal/faultlayer/lease), contested like any adopter's component.
//
// The contract (contract_test.go) drives lease clients through a proxied connection that a
// reset leg breaks, and kills a lease holder process that a restarted generation must
// reclaim; it records every acquire, renew, release and reclaim as a history (package
// contested/history) and holds it against the Lease model (mutual exclusion, fence
// monotonicity, stale epochs refused), then checks the table's final state.
package leasetable
