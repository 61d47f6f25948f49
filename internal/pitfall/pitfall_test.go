package pitfall_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/pitfall"
	"github.com/contested/contested/internal/plan"
	"github.com/contested/contested/internal/registry"
)

// TestTheShippedCatalogNamesOnlyWhatExists: every pitfall's categories
// are claim categories, its levers are levers of the fault set and its
// models are models of contested/history, so a plan never proposes what
// cannot be run or checked.
func TestTheShippedCatalogNamesOnlyWhatExists(t *testing.T) {
	models := plan.Models()
	cats := make([]string, len(registry.Categories))
	for i, c := range registry.Categories {
		cats[i] = string(c)
	}
	for _, p := range pitfall.Catalog() {
		t.Run(p.ID, func(t *testing.T) {
			for _, c := range p.Categories {
				if !slices.Contains(cats, c) {
					t.Errorf("category %q is no claim category (%v)", c, cats)
				}
			}
			for _, l := range p.Levers {
				if _, ok := levers.Lookup(l); !ok {
					t.Errorf("lever %q is not in the fault set (%v)", l, levers.Names())
				}
			}
			for _, m := range p.Models {
				if !slices.Contains(models, m) {
					t.Errorf("model %q is not a model of contested/history (%v)", m, models)
				}
			}
			if len(p.OracleWords) == 0 {
				t.Errorf("no oracle words: no oracle could be seen to check it")
			}
			if len(p.Levers) == 0 && !strings.Contains(p.How, "no lever") {
				t.Errorf("no lever forces it, and how does not say so: %q", p.How)
			}
		})
	}
}

// TestTheCatalogHoldsThePitfallsThatRecur: the failure modes public
// analyses keep finding are in the catalog, by their ids.
func TestTheCatalogHoldsThePitfallsThatRecur(t *testing.T) {
	for _, id := range []string{"lost-acknowledged-write", "duplicate-effect-on-retry", "stale-read-after-failover", "lost-update",
		"two-lease-holders", "gap-between-commits", "clock-skew", "unbounded-queue"} {
		if _, ok := pitfall.Lookup(id); !ok {
			t.Errorf("the catalog has no %s (ids: %v)", id, pitfall.IDs())
		}
	}
}

// TestParseRefusesABadCatalog: an unknown key, a missing field, a
// repeated id and an unexplained class limit are each refused.
func TestParseRefusesABadCatalog(t *testing.T) {
	const good = `id = "x"
title = "t"
hypothesis = "h"
categories = ["safety"]
levers = []
how = "no lever"
models = []
checker = "c"
oracle_words = ["w"]
workload = "w"
ambiguity = "a"
`
	tests := []struct {
		name, doc, says string
	}{
		{"an unknown key", "[[pitfall]]\n" + good + "severity = 1\n", "severity"},
		{"no checker", "[[pitfall]]\n" + strings.Replace(good, `checker = "c"`, "", 1), "lacks"},
		{"an id twice", "[[pitfall]]\n" + good + "[[pitfall]]\n" + good, "twice"},
		{"classes without a reason", "[[pitfall]]\n" + good + "classes = [\"lock\"]\n", "class_reason"},
		{"an id that is no slug", "[[pitfall]]\n" + strings.Replace(good, `id = "x"`, `id = "Two Words"`, 1), "slug"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pitfall.Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Parse = %v, want an error saying %q", err, tt.says)
			}
		})
	}
	if ps, err := pitfall.Parse([]byte("[[pitfall]]\n" + good)); err != nil || len(ps) != 1 {
		t.Errorf("a good catalog: %v, %v", ps, err)
	}
}

// TestApplicability: a pitfall applies to a claim of one of its
// categories on a surface of one of its classes, and says why not
// otherwise.
func TestApplicability(t *testing.T) {
	holders, _ := pitfall.Lookup("two-lease-holders")
	tests := []struct {
		name, category, class string
		applies               bool
		why                   string
	}{
		{"a safety claim of a lock", "safety", "lock", true, ""},
		{"a liveness claim of a lock", "liveness", "lock", false, "falsifies safety or membership claims, and this one is a liveness claim"},
		{"a safety claim of a store", "safety", "store", false, "holds no lock (class store)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := holders.Applies(tt.category, tt.class)
			if ok != tt.applies || !strings.Contains(why, tt.why) {
				t.Errorf("Applies(%s, %s) = %v, %q; want %v, %q", tt.category, tt.class, ok, why, tt.applies, tt.why)
			}
		})
	}
	gap, _ := pitfall.Lookup("gap-between-commits")
	if got := gap.Forces([]string{"reset", "disconnect"}); len(got) != 0 {
		t.Errorf("reset and disconnect force a gap between two commits: %v", got)
	}
	if got := gap.Forces([]string{"reset", "crash-and-resume"}); !slices.Equal(got, []string{"crash-and-resume"}) {
		t.Errorf("Forces = %v, want crash-and-resume", got)
	}
	if !gap.Sees("exactly-once (applies per key)") || gap.Sees("user-sees (banner)") {
		t.Errorf("Sees reads the oracle's words wrong")
	}
}
