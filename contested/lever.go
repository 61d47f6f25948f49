package contested

import (
	"fmt"

	"github.com/contested/contested/registry"
)

// Lever is one kind of fault. The values are the registry's lever names.
type Lever string

// The six contract levers.
const (
	// Disconnect disables the proxy: new connections are refused and live
	// ones are dropped.
	Disconnect Lever = registry.LeverDisconnect
	// Reset resets connections that carry traffic (Toxiproxy reset_peer).
	Reset Lever = registry.LeverReset
	// ConfirmTimeout lets a write reach the server and commit but drops the
	// server's reply, so the client times out on a write that happened: an
	// ambiguous outcome.
	ConfirmTimeout Lever = registry.LeverConfirmTimeout
	// Burst floods a consumer with a seeded permutation of duplicate,
	// shuffled and out-of-order deliveries.
	Burst Lever = registry.LeverBurst
	// PoolExhaustion has PgFaultArmer hold the victim database's
	// connections up to its connection limit, so the victim's pool cannot
	// grow.
	PoolExhaustion Lever = registry.LeverPoolExhaustion
	// CrashAndResume kills a worker process with SIGKILL mid-work and
	// restarts it.
	CrashAndResume Lever = registry.LeverCrashAndResume
)

// network reports whether the lever acts on a Toxiproxy proxy.
func (l Lever) network() bool {
	return l == Disconnect || l == Reset || l == ConfirmTimeout
}

func (l Lever) valid() error {
	if _, ok := registry.LookupLever(string(l)); !ok {
		return fmt.Errorf("unknown lever %q (known: %v)", string(l), registry.LeverNames())
	}
	return nil
}
