// Package contested is the root of a task runner that tells a team whether its
// services survive adversity: deterministic fault legs through a real Toxiproxy
// and a real Postgres, an armed-versus-fired record of every fault, a gate that
// refuses a green run in which faults did not run, and an arbitration ladder
// that gives every failure an owner and an action.
//
// The packages a Go test imports live below this one: contested/contested (the
// leg API), faultrecord (records and the gate), faultlayer (Toxiproxy, Postgres
// and the port leases) and registry (contested-surfaces.toml).
package contested
