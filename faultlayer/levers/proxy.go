package levers

import (
	"context"
	"fmt"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
)

// proxyFault is a fault armed on a Toxiproxy proxy: the network levers'.
type proxyFault struct {
	in   bool
	what string
	heal func() error
}

func (f *proxyFault) Injector() (bool, string)   { return f.in, f.what }
func (f *proxyFault) Heal(context.Context) error { return f.heal() }

// armToxic adds a toxic of toxicity 1 to the target's proxy and reads it
// back: the injector side of reset and confirm-timeout. Heal removes it.
func armToxic(ctx context.Context, t Target, name, typ, stream string) (Fault, error) {
	f := &proxyFault{heal: func() error { return t.Proxy.RemoveToxic(name) }}
	if _, err := t.Proxy.AddToxic(name, typ, stream, 1, toxiproxy.Attributes{"timeout": 0}); err != nil {
		return f, err
	}
	toxics, err := t.Proxy.Toxics()
	if err != nil {
		return f, fmt.Errorf("read the toxics back: %w", err)
	}
	for _, tx := range toxics {
		f.in = f.in || (tx.Name == name && tx.Type == typ && tx.Toxicity == 1)
	}
	f.what = fmt.Sprintf("proxy %s %s %s toxic (toxicity 1, read back: %v); victim backends before: %d", t.Proxy.Name, stream, typ, f.in, t.backends(ctx))
	return f, nil
}
