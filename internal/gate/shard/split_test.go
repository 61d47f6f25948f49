package shard

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/contested/contested/internal/gotest"
)

func inventory() []gotest.Package {
	return []gotest.Package{
		{ImportPath: "example.com/m", Tests: []string{"TestA", "TestB", "TestC", "TestD", "TestE"}},
		{ImportPath: "example.com/m/x", Tests: []string{"TestX"}},
		{ImportPath: "example.com/m/y", Tests: []string{"TestY", "TestZ"}},
		{ImportPath: "example.com/m/empty", Tests: []string{}},
	}
}

// owners is how many shards own each test of the plan.
func owners(p Plan) map[string]int {
	n := map[string]int{}
	for _, share := range p.Shards {
		for _, o := range share {
			for _, t := range o.Tests {
				n[key(o.Package, t)]++
			}
		}
	}
	return n
}

func TestSplitOwnsEveryTestOnce(t *testing.T) {
	inv := inventory()
	for total := 1; total <= 12; total++ {
		t.Run(fmt.Sprint(total), func(t *testing.T) {
			p := Split(inv, total, nil)
			n := owners(p)
			for _, pkg := range inv {
				for _, name := range pkg.Tests {
					if n[key(pkg.ImportPath, name)] != 1 {
						t.Errorf("%s %s owned %d times", pkg.ImportPath, name, n[key(pkg.ImportPath, name)])
					}
				}
			}
			if len(n) != 8 || len(p.Shards) != total {
				t.Errorf("%d tests owned over %d shards", len(n), len(p.Shards))
			}
		})
	}
}

func TestSplitIsStable(t *testing.T) {
	inv := inventory()
	a := Split(inv, 3, nil)
	rev := slices.Clone(inv)
	slices.Reverse(rev)
	b := Split(rev, 3, nil)
	if a.Digest != b.Digest || a.Digest == "" {
		t.Errorf("the same inventory in another order splits another way: %s, %s", a.Digest, b.Digest)
	}
	if c := Split(inv, 4, nil); c.Digest == a.Digest {
		t.Errorf("4 ways and 3 ways have one digest")
	}
}

func TestSplitKeepsLightPackagesWhole(t *testing.T) {
	p := Split(inventory(), 3, nil)
	for _, share := range p.Shards {
		for _, o := range share {
			if o.Package == "example.com/m/x" && !o.Whole {
				t.Errorf("a one-test package was split: %+v", o)
			}
			if o.Package == "example.com/m" && o.Whole {
				t.Errorf("a package heavier than a shard's share was kept whole: %+v", o)
			}
		}
	}
	if one := Split(inventory(), 1, nil); len(one.Shards[0]) != 4 {
		t.Errorf("one shard: %+v; want every package whole", one.Shards[0])
	}
}

func TestSplitBalancesByTimings(t *testing.T) {
	inv := []gotest.Package{{ImportPath: "m", Tests: []string{"TestSlow", "TestA", "TestB", "TestC"}}}
	timings := Timings{"m TestSlow": 30 * time.Second, "m TestA": time.Second, "m TestB": time.Second, "m TestC": time.Second}
	p := Split(inv, 2, timings)
	if !p.Balanced {
		t.Error("a split with timings is not marked balanced")
	}
	for _, share := range p.Shards {
		for _, o := range share {
			if slices.Contains(o.Tests, "TestSlow") && len(o.Tests) != 1 {
				t.Errorf("the slow test shares its shard: %+v; want it alone, the three others on the other shard", o)
			}
		}
	}
	if even := Split(inv, 2, nil); even.Digest == p.Digest {
		t.Error("timings did not change the split")
	}
}

func TestTimingsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if got, err := ReadTimings(dir); got != nil || err != nil {
		t.Fatalf("no file: %v, %v; want nothing", got, err)
	}
	want := Timings{"m TestA": 1500 * time.Millisecond}
	if err := WriteTimings(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTimings(dir)
	if err != nil || got["m TestA"] != want["m TestA"] {
		t.Fatalf("read back %v, %v; want %v", got, err, want)
	}
}
