package levers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

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

// toxic is one toxic a network lever adds.
type toxic struct {
	name, typ, stream string
	attrs             map[string]any
}

// armToxic adds one toxic of toxicity 1 with timeout 0 to the target's
// proxy and reads it back: the injector side of confirm-timeout.
func armToxic(ctx context.Context, t Target, name, typ, stream string) (Fault, error) {
	return armToxics(ctx, t, toxic{name: name, typ: typ, stream: stream, attrs: map[string]any{"timeout": 0}})
}

// armToxics adds toxics of toxicity 1 to the target's proxy and reads them
// back; the fault is in place when every one of them is. Heal removes
// them.
func armToxics(ctx context.Context, t Target, toxics ...toxic) (Fault, error) {
	var added []string
	f := &proxyFault{heal: func() error {
		var errs []error
		for _, name := range added {
			errs = append(errs, t.Proxy.RemoveToxic(name))
		}
		return errors.Join(errs...)
	}}
	for _, x := range toxics {
		if _, err := t.Proxy.AddToxic(x.name, x.typ, x.stream, 1, toxiproxy.Attributes(x.attrs)); err != nil {
			return f, err
		}
		added = append(added, x.name)
	}
	back, err := t.Proxy.Toxics()
	if err != nil {
		return f, fmt.Errorf("read the toxics back: %w", err)
	}
	f.in = true
	var what []string
	for _, x := range toxics {
		found := false
		for _, tx := range back {
			found = found || (tx.Name == x.name && tx.Type == x.typ && tx.Stream == x.stream && tx.Toxicity == 1)
		}
		f.in = f.in && found
		what = append(what, fmt.Sprintf("%s %s toxic%s", x.stream, x.typ, attrText(x.attrs)))
	}
	f.what = fmt.Sprintf("proxy %s %s (toxicity 1, read back: %v); victim backends before: %d", t.Proxy.Name, strings.Join(what, " + "), f.in, t.backends(ctx))
	return f, nil
}

// attrText shows a toxic's attributes other than a zero timeout.
func attrText(attrs map[string]any) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		v := attrs[k]
		if k == "timeout" && fmt.Sprint(v) == "0" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
