package registry

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/contested/contested/internal/envvar"
)

// SchemaVersion is the only value of the top-level schema key this package
// reads. A future incompatible format bumps it, so an old binary refuses a
// new file instead of misreading it.
const SchemaVersion = 1

// Registry is a loaded, validated contested-surfaces.toml.
type Registry struct {
	Path     string // as given to Load or Parse; every error names it
	Schema   int
	Gate     Gate
	Guard    Guard
	Surfaces []Surface // in file order
	// Cluster is the [cluster] table, nil when the file has none.
	Cluster *Cluster
	// Mutants is the optional [mutants] table (`mage mutants`).
	Mutants Mutants
	// Battery is the optional [battery] table: how validate runs go test.
	Battery Battery
	// Reuse is the optional [reuse] table: how far validate explores a
	// surface whose inputs changed.
	Reuse Reuse
	// Degraded is the [degraded] table (`mage degraded`), its defaults when
	// the file has none.
	Degraded Degraded
	// Plan is the optional [plan] table (`mage plan`), its defaults when
	// the file has none. It decides how a change is planned, never how a
	// test runs, so it is no part of the registry's JSON (which the reuse
	// digests fold in).
	Plan Plan `json:"-"`
}

// Gate is the [gate] table: what program-gate insists on beyond "every
// armed fault fired".
type Gate struct {
	// RecordingClasses must each have fired at least once for a run to be
	// certified (phase 5).
	RecordingClasses []string
	// SelfTests must still exist in the test inventory (phase 6): they are
	// the tests that prove the gate and the fault layer themselves work, and
	// deleting one would silently weaken the gate.
	SelfTests []string

	recordingClassesAt, selfTestsAt []pos
}

// Guard is the optional [guard] table for PgFaultArmer's canonical-database
// guard.
type Guard struct {
	// CanonicalDatabases are database names PgFaultArmer must never arm
	// against, in addition to whatever it already treats as canonical
	// (anything the harness did not create). Empty when the file says
	// nothing; the armer keeps its own built-in list.
	CanonicalDatabases []string
}

// Surface is one component plus one claimed behaviour.
type Surface struct {
	ID       string // unique; what records, the ladder and `mage contested <id>` name
	Class    string // recording class; the gate counts fired faults per class
	Owner    string // who gets a RED verdict
	Behavior string // the promise, in one sentence
	Oracle   string // the check that decides whether the promise held
	// Package is the Go package (as given to go test, e.g. "./examples/ledger/store")
	// whose tests these are; empty when the file does not say. Used to build
	// replay commands and to run the surface's legs in isolation.
	Package string
	Legs    []string // lever names, each from Levers
	// Tests are Go test names. An entry names a top-level test
	// ("TestStoreContract") or a subtest path ("TestContracts/store"); a
	// test id maps to the surface with the longest matching entry.
	Tests  []string
	Budget Budget
	// Levels restricts legs to some CONTESTED_LEVEL values; legs it does
	// not name run at every level.
	Levels Levels
	// Needs are the capabilities (capability.Names) the surface's legs
	// need beyond the fault layer, for example "chromium".
	Needs []string
	// Claims are the surface's numbered promises ([[surface.claims]]), or
	// its behavior as its one claim when it declares none (claims.go).
	// They say what a run's evidence is about, never how a test runs, so
	// they are no part of the surface's JSON (which the reuse digests fold
	// in): rewording a claim does not run its surface again.
	Claims []Claim `json:"-"`
	Line   int     // the line of the [[surface]] header (or inline table) in Registry.Path

	testsAt []pos
}

// Load reads and validates the registry at path. A missing or unreadable
// file is an error naming the path and wrapping the os error (so
// errors.Is(err, fs.ErrNotExist) works); anything wrong inside the file is
// an ErrorList matching ErrInvalid.
func Load(path string) (*Registry, error) {
	data, err := readRegistry(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read the surface registry (set %s to its path, or create it): %w", path, envvar.Surfaces, err)
	}
	return Parse(path, data)
}

// maxRegistry caps the registry file: far above any real one.
const maxRegistry = 4 << 20

// errNotRegistryFile reports a registry path that is not a regular file
// (a FIFO, a device, a directory): never read, never waited on.
var errNotRegistryFile = errors.New("not a regular file")

// readRegistry reads the file at path (a link to it is the user's
// choice), opened non-blocking so that a FIFO never hangs the command,
// regular files only, at most maxRegistry bytes.
func readRegistry(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%w (%s)", errNotRegistryFile, fi.Mode().Type())
	case fi.Size() > maxRegistry:
		return nil, fmt.Errorf("%d bytes, over the %d MiB a registry may hold", fi.Size(), maxRegistry>>20)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRegistry+1))
	if err == nil && len(b) > maxRegistry {
		err = fmt.Errorf("grew past %d MiB while read", maxRegistry>>20)
	}
	return b, err
}

// Parse validates data as a registry file called name (name is only used
// in messages and as Registry.Path). It reports every problem it can find in
// one pass, as an ErrorList sorted by position; the registry is nil then,
// because nothing should run on a registry that is partly wrong.
func Parse(name string, data []byte) (*Registry, error) {
	root, synErr := parseTree(name, data)
	if synErr != nil {
		return nil, ErrorList{synErr}
	}
	c := &checker{file: name}
	reg := c.registry(root)
	if err := c.errs.err(); err != nil {
		return nil, err
	}
	reg.Path = name
	return reg, nil
}

// Surface returns the surface with that id.
func (r *Registry) Surface(id string) (Surface, bool) {
	i := slices.IndexFunc(r.Surfaces, func(s Surface) bool { return s.ID == id })
	if i < 0 {
		return Surface{}, false
	}
	return r.Surfaces[i], true
}

// SurfaceForTest maps a test id as go test reports it
// ("TestStoreContract/reset/seed=3") to the surface that registered it: the
// first step of the arbitration ladder. The surface whose tests entry is
// the longest prefix of the id, by whole path elements, wins.
func (r *Registry) SurfaceForTest(testID string) (Surface, bool) {
	id := strings.Split(testID, "/")
	best, bestLen := -1, 0
	for i, s := range r.Surfaces {
		for _, t := range s.Tests {
			entry := strings.Split(t, "/")
			if len(entry) > bestLen && len(entry) <= len(id) && slices.Equal(entry, id[:len(entry)]) {
				best, bestLen = i, len(entry)
			}
		}
	}
	if best < 0 {
		return Surface{}, false
	}
	return r.Surfaces[best], true
}

// Classes returns the distinct classes of the registered surfaces, sorted.
// The gate uses it to name classes with zero fired faults.
func (r *Registry) Classes() []string {
	var classes []string
	for _, s := range r.Surfaces {
		if s.Class != "" && !slices.Contains(classes, s.Class) {
			classes = append(classes, s.Class)
		}
	}
	slices.Sort(classes)
	return classes
}

// IDs returns the surface ids in file order.
func (r *Registry) IDs() []string {
	ids := make([]string, len(r.Surfaces))
	for i, s := range r.Surfaces {
		ids[i] = s.ID
	}
	return ids
}

// CheckTests checks that every test the registry names (surfaces' tests,
// the [cluster] test, gate self-tests) exists in the test inventory
// (top-level test names, as internal/gotest.List reads them from source;
// subtest paths in the inventory are reduced to their top-level name). A surface's
// tests entry is checked by its top-level name: subtests cannot be listed
// without running them. The ErrorList it returns matches ErrMissingTest
// (and so ErrInvalid); each problem points at the entry and names the
// surface's line.
func (r *Registry) CheckTests(inventory []string) error {
	have := map[string]bool{}
	for _, name := range inventory {
		if name = strings.TrimSpace(name); name != "" {
			have[topLevel(name)] = true
		}
	}
	if len(have) == 0 {
		return ErrorList{{File: r.Path, Kind: ErrMissingTest,
			Msg: "the test inventory is empty, so no registered test can be found; check that the module's _test.go files declare TestXxx functions"}}
	}
	var errs ErrorList
	for _, s := range r.Surfaces {
		for i, t := range s.Tests {
			if have[topLevel(t)] {
				continue
			}
			at := atOr(s.testsAt, i, pos{s.Line, 0})
			errs = append(errs, &Error{File: r.Path, Line: at.line, Column: at.col, Kind: ErrMissingTest,
				Msg: fmt.Sprintf("surface %q (line %d) lists test %q, which is not in the test inventory; rename the entry to an existing test, or restore the test%s",
					s.ID, s.Line, topLevel(t), suggest(topLevel(t), keysOf(have)))})
		}
	}
	if e := r.checkClusterTest(have); e != nil {
		errs = append(errs, e)
	}
	for i, t := range r.Gate.SelfTests {
		if have[topLevel(t)] {
			continue
		}
		at := atOr(r.Gate.selfTestsAt, i, pos{})
		errs = append(errs, &Error{File: r.Path, Line: at.line, Column: at.col, Kind: ErrMissingTest,
			Msg: fmt.Sprintf("gate self-test %q is not in the test inventory; it proves the gate itself works, so restore it (or rename the entry in [gate] self_tests if it was renamed)%s",
				t, suggest(topLevel(t), keysOf(have)))})
	}
	return errs.err()
}

// MissingSelfTests returns the gate self-tests absent from the inventory,
// in registry order (phase 6 lists them in fault-report.json).
func (r *Registry) MissingSelfTests(inventory []string) []string {
	have := map[string]bool{}
	for _, name := range inventory {
		have[topLevel(strings.TrimSpace(name))] = true
	}
	var missing []string
	for _, t := range r.Gate.SelfTests {
		if !have[topLevel(t)] {
			missing = append(missing, t)
		}
	}
	return missing
}

// CheckRecord checks a fault record's surface, class and leg against the
// registry. An unregistered surface is ErrUnknownSurface; a class or leg
// that disagrees with the registered surface is ErrRecordMismatch. Empty
// class or leg skip those checks, so CheckRecord(id, "", "") checks only
// that the surface exists. Errors name the registry file (and the
// surface's line); the caller adds the record's own path.
func (r *Registry) CheckRecord(surface, class, leg string) error {
	s, ok := r.Surface(surface)
	if !ok {
		return &Error{File: r.Path, Kind: ErrUnknownSurface,
			Msg: fmt.Sprintf("a record names surface %q, which is not registered (registered: %s); register it or fix the surface the leg names%s",
				surface, strings.Join(r.IDs(), ", "), suggest(surface, r.IDs()))}
	}
	var errs ErrorList
	if class != "" && class != s.Class {
		errs = append(errs, &Error{File: r.Path, Line: s.Line, Kind: ErrRecordMismatch,
			Msg: fmt.Sprintf("a record for surface %q says class %q, but the registry says %q; the leg must record the registered class", s.ID, class, s.Class)})
	}
	if leg != "" && !slices.Contains(s.Legs, leg) {
		errs = append(errs, &Error{File: r.Path, Line: s.Line, Kind: ErrRecordMismatch,
			Msg: fmt.Sprintf("a record for surface %q has leg %q, which the surface does not declare (legs: %s); add it to legs or stop arming it",
				s.ID, leg, strings.Join(s.Legs, ", "))})
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errs.err()
}

// topLevel returns the top-level test name of a test id.
func topLevel(testID string) string {
	name, _, _ := strings.Cut(testID, "/")
	return name
}

func atOr(ps []pos, i int, fallback pos) pos {
	if i < len(ps) {
		return ps[i]
	}
	return fallback
}

func keysOf(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
