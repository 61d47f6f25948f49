package levers

import (
	"context"
	"fmt"
)

// NameDisconnect is Disconnect's name.
const NameDisconnect = "disconnect"

// Disconnect disables the proxy: new connections are refused and live
// ones are dropped. The injector side reads the proxy back disabled.
// Through the engine's userland proxy a disabled Toxiproxy looks like an
// accepted-then-closed connection, so EOF and reset prove it too.
var Disconnect Lever = disconnect{spec{
	name:    NameDisconnect,
	meaning: "the proxy is disabled: new connections are refused and live ones dropped",
	needs:   NeedProxy,
	signals: []Signal{SigRefused, SigReset, SigEOF, SigBrokenPipe, SigConnClosed},
	doc: Doc{
		Arm:      "disable the proxy",
		Injector: "proxy read back disabled",
		Victim:   "refused, reset or EOF",
		Levels: [3]string{
			"disables the proxy at a seeded step for 2-6% of the span or 80-400ms",
			"disable it again, one between level 1's and one after them",
			"disables it 0-2 steps after the heal, for 2-6 steps or 30-150ms, while the clients reconnect",
		},
	},
}}

type disconnect struct{ spec }

func (d disconnect) Arm(ctx context.Context, t Target) (Fault, error) {
	if err := t.check(d, d.needs); err != nil {
		return nil, err
	}
	f := &proxyFault{heal: t.Proxy.Enable}
	before := t.backends(ctx)
	if err := t.Proxy.Disable(); err != nil {
		return f, err
	}
	p, err := t.Toxiproxy.Proxy(t.Proxy.Name)
	if err != nil {
		return f, fmt.Errorf("read the proxy back: %w", err)
	}
	f.in = !p.Enabled
	f.what = fmt.Sprintf("proxy %s disabled (read back enabled=%v); victim backends before: %d", p.Name, p.Enabled, before)
	return f, nil
}
