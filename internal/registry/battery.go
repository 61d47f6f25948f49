package registry

import (
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/contested/contested/internal/faultlayer/noise"
)

// Battery is the optional [battery] table: how validate runs the battery.
//
//	[battery]
//	packages_per_core = 2   # at most this many packages at once, per core (go test -p); 1 to 8
//	noise = "cpu:2"         # a noisy neighbour beside every validate's battery (CONTESTED_NOISE wins)
//
// go test runs as many packages at once as the machine has cores, which
// keeps the cores busy when the tests compute; a battery whose packages
// mostly wait (containers coming up, databases, timeouts that must pass)
// leaves them idle, and more packages per core fill that time.
type Battery struct {
	// PackagesPerCore times the cores (GOMAXPROCS) is the battery's go
	// test -p; 0 when the table does not set it (go test's own -p).
	PackagesPerCore int
	// Noise is the neighbour validate arms beside the battery when
	// CONTESTED_NOISE is unset (noise.Parse); zero for none.
	Noise noise.Spec
	// Line is the line of the [battery] header; 0 when there is none.
	Line int
}

// P is the go test -p for a machine with cores cores, 0 for go test's own.
func (b Battery) P(cores int) int {
	if b.PackagesPerCore <= 1 {
		return 0
	}
	return b.PackagesPerCore * max(cores, 1)
}

var batteryKeys = []string{"packages_per_core", "noise"}

// maxPackagesPerCore bounds packages_per_core: past a few, the packages
// only contend for the cores and the fault layer's 32 proxy ports.
const maxPackagesPerCore = 8

func (c *checker) battery(root *value) Battery {
	t := c.table(root, "battery", "[battery]")
	if t == nil {
		return Battery{}
	}
	b := Battery{Line: t.at.line}
	c.knownKeys(t, batteryKeys, "[battery]")
	if s, v := c.str(t, "noise", "[battery]"); v != nil {
		spec, err := noise.Parse(s)
		if err != nil {
			c.errorf(v.valueAt, "[battery] noise: %v", strings.TrimPrefix(err.Error(), noise.ErrSpec.Error()+": "))
		}
		b.Noise = spec
	}
	v := t.fields["packages_per_core"]
	if v == nil {
		return b
	}
	got := v.describe()
	if v.kind == unstable.Integer {
		got = v.text
	}
	n, err := strconv.ParseInt(v.text, 0, 64)
	if v.kind != unstable.Integer || err != nil || n < 1 || n > maxPackagesPerCore {
		c.errorf(v.valueAt, "[battery] packages_per_core must be a whole number from 1 to %d (how many packages go test runs at once, per core), not %s", maxPackagesPerCore, got)
		return b
	}
	b.PackagesPerCore = int(n)
	return b
}
