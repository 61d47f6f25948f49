// Package capability works out what this machine gives a run (a Docker
// engine, Postgres binaries, Chromium, cores, free disk) and, for each
// piece that is missing, the command that provides it, in one wording that
// the run's summary, its artifacts and the tests that skip all share.
package capability

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/images"
	"github.com/contested/contested/internal/tier"
)

// Name is one capability a leg, a stage or a test can need.
type Name string

// The capabilities a run works out. Names are what the registry's
// surface key needs lists and what a skip message names.
const (
	Docker   Name = "docker"
	Postgres Name = "postgres"
	Chromium Name = "chromium"
	Cores    Name = "cores"
	Disk     Name = "disk"
)

// Names are the known capabilities, in the order a run lists them.
var Names = []Name{Docker, Postgres, Chromium, Cores, Disk}

// Known reports whether n names a capability.
func Known(n string) bool { return slices.Contains(Names, Name(n)) }

// MinFreeDisk is the free space a run wants under its results directory:
// the kept test binaries of a module the size of this repository take
// about 800 MB, and the Go build cache and the images grow beside them.
const MinFreeDisk = 2 << 30

// Capability is one capability as this machine has it (a row of the
// capability matrix in validate.json): what is required, whether it is
// present, which version and from where, who needs it, and the command
// that provides it when it is missing.
type Capability struct {
	Name        Name     `json:"name"`
	Requirement string   `json:"requirement"`
	NeededBy    []string `json:"needed_by"`
	Present     bool     `json:"present"`
	Version     string   `json:"version,omitempty"`
	// Source is where it came from: a path, an engine's socket, /proc.
	Source string `json:"source,omitempty"`
	// Provide is the command that installs it on a machine of this kind.
	Provide string `json:"provide,omitempty"`
	// Detail says what was looked at when it is missing.
	Detail string `json:"detail,omitempty"`
}

// provide is the command that provides each capability on a Debian-based
// machine (the kind this project runs on).
var provide = map[Name]string{
	Docker:   "apt-get install docker.io && service docker start",
	Postgres: "apt-get install postgresql",
	Chromium: "apt-get install chromium",
	Cores:    "run on a machine with more CPUs",
	Disk:     "free space under the results directory (" + envvar.ResultsDir + ")",
}

// requirement is what each capability must be.
var requirement = map[Name]string{
	Docker:   "a Docker engine that answers (the containers layer, the cluster rig)",
	Postgres: "initdb and postgres binaries (the embedded layer, the locally built Postgres image)",
	Chromium: "a Chromium or Chrome binary on PATH (the degraded-UX stage, the HTML report's rendering)",
	Cores:    "at least 1 CPU; the battery's parallelism follows what they give",
	Disk:     fmt.Sprintf("%d GiB free under the results directory (kept test binaries, reports)", MinFreeDisk>>30),
}

// Provide is the command that provides n.
func Provide(n Name) string { return provide[n] }

// Missing says, in the one wording every output uses, that c is missing:
// "missing capability chromium: not found on PATH (looked for …); provide
// it: apt-get install chromium". Skip messages start with it, so that a
// run can read which capability a skipped test lacked (FromOutput).
func (c Capability) Missing() string {
	s := fmt.Sprintf("missing capability %s", c.Name)
	if c.Detail != "" {
		s += ": " + c.Detail
	}
	if c.Provide != "" {
		s += "; provide it: " + c.Provide
	}
	return s
}

// Say is the matrix row in words: "chromium 120.0 (/usr/bin/chromium)" or
// the Missing sentence.
func (c Capability) Say() string {
	if !c.Present {
		return c.Missing()
	}
	s := string(c.Name)
	if c.Version != "" {
		s += " " + c.Version
	}
	if c.Source != "" {
		s += " (" + c.Source + ")"
	}
	return s
}

// missingRe finds the capability a skip or failure message names.
var missingRe = regexp.MustCompile(`missing capability ([a-z]+)`)

// FromOutput returns the capabilities a test's output says were missing,
// in the order it names them.
func FromOutput(out string) []Name {
	var names []Name
	for _, m := range missingRe.FindAllStringSubmatch(out, -1) {
		if n := Name(m[1]); Known(m[1]) && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// Probe works out one capability on this machine. dir is the results
// directory (for Disk); ctx bounds the probes that ask a program or an
// engine.
func Probe(ctx context.Context, n Name, dir string) Capability {
	c := Capability{Name: n, Requirement: requirement[n], Provide: provide[n], NeededBy: []string{}}
	switch n {
	case Docker:
		probeDocker(ctx, &c)
	case Postgres:
		probePostgres(&c)
	case Chromium:
		probeChromium(ctx, &c)
	case Cores:
		c.Present, c.Version, c.Source = true, fmt.Sprint(runtime.NumCPU()), "runtime.NumCPU"
	case Disk:
		probeDisk(dir, &c)
	}
	if c.Present {
		c.Provide, c.Detail = "", ""
	}
	return c
}

// ErrMissing reports that a capability is missing; the error's text is
// the capability's Missing sentence.
var ErrMissing = errors.New("missing capability")

// Err is ErrMissing with c's sentence, or nil when c is present.
func (c Capability) Err() error {
	if c.Present {
		return nil
	}
	return fmt.Errorf("%w %s", ErrMissing, strings.TrimPrefix(c.Missing(), "missing capability "))
}

func probeDocker(ctx context.Context, c *Capability) {
	c.Source = os.Getenv("DOCKER_HOST")
	if c.Source == "" {
		c.Source = "unix:///var/run/docker.sock"
	}
	cli, err := dockerenv.Connect(ctx)
	if err != nil {
		c.Detail = fmt.Sprintf("no engine answered at %s (%v)", c.Source, err)
		return
	}
	defer cli.Close()
	c.Present = true
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if v, err := cli.ServerVersion(vctx, client.ServerVersionOptions{}); err == nil {
		c.Version = v.Version
	}
}

func probePostgres(c *Capability) {
	in, err := images.PostgresInstallation("")
	if err != nil {
		c.Detail = err.Error()
		return
	}
	c.Present, c.Version, c.Source = true, in.Version, in.Bin
}

// browserNames are the executables a Chromium is looked for as, in order.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// FindChromium returns the Chromium to drive: path when it is given, else
// the first of browserNames on PATH. Its error is ErrMissing with the
// capability's sentence.
func FindChromium(path string) (string, error) {
	if path != "" {
		if _, err := exec.LookPath(path); err != nil {
			c := Capability{Name: Chromium, Provide: provide[Chromium], Detail: fmt.Sprintf("%s: %v", path, err)}
			return "", c.Err()
		}
		return path, nil
	}
	for _, n := range browserNames {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	c := Capability{Name: Chromium, Provide: provide[Chromium], Detail: fmt.Sprintf("not found on PATH (looked for %s)", strings.Join(browserNames, ", "))}
	return "", c.Err()
}

func probeChromium(ctx context.Context, c *Capability) {
	p, err := FindChromium("")
	if err != nil {
		c.Detail = fmt.Sprintf("not found on PATH (looked for %s)", strings.Join(browserNames, ", "))
		return
	}
	c.Present, c.Source = true, p
	vctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(vctx, p, "--version").Output(); err == nil {
		// "Chromium 120.0.6099.224 built on Debian 12.4, running on Debian 12.5"
		for _, f := range strings.Fields(string(out)) {
			if f != "" && f[0] >= '0' && f[0] <= '9' {
				c.Version = f
				break
			}
		}
	}
}

func probeDisk(dir string, c *Capability) {
	c.Source = dir
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		c.Detail = fmt.Sprintf("cannot read the free space of %s: %v", dir, err)
		return
	}
	free := st.Bavail * uint64(st.Bsize)
	c.Version = fmt.Sprintf("%.1f GiB free", float64(free)/(1<<30))
	c.Present = free >= MinFreeDisk
	if !c.Present {
		c.Detail = fmt.Sprintf("%s free under %s, want %d GiB", c.Version, dir, MinFreeDisk>>30)
	}
}

// Matrix is what a run works out about the machine: one row per
// capability, with who needs it.
type Matrix []Capability

// Work probes every capability at once (asking Chromium its version takes
// a moment) and returns the matrix, nobody needing anything yet.
func Work(ctx context.Context, dir string) Matrix {
	m := make(Matrix, len(Names))
	done := make(chan struct{}, len(Names))
	for i, n := range Names {
		go func() {
			m[i] = Probe(ctx, n, dir)
			done <- struct{}{}
		}()
	}
	for range Names {
		<-done
	}
	return m
}

// Need records that who (a surface/leg, a stage, a test) needs n.
func (m Matrix) Need(n Name, who string) {
	for i := range m {
		if m[i].Name == n && !slices.Contains(m[i].NeededBy, who) {
			m[i].NeededBy = append(m[i].NeededBy, who)
		}
	}
}

// Get returns n's row.
func (m Matrix) Get(n Name) (Capability, bool) {
	for _, c := range m {
		if c.Name == n {
			return c, true
		}
	}
	return Capability{}, false
}

// Lacks reports whether n is in the matrix and missing.
func (m Matrix) Lacks(n Name) bool {
	c, ok := m.Get(n)
	return ok && !c.Present
}

// MissingNeeded returns the rows that are missing and needed by someone.
func (m Matrix) MissingNeeded() []Capability {
	var out []Capability
	for _, c := range m {
		if !c.Present && len(c.NeededBy) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Require stops a test that needs n when this machine lacks it, in the
// words every output uses (Missing): it fails under CI, where everything
// the battery needs is installed, and skips elsewhere, so that a run can
// name the capability beside every leg the test would have run.
func Require(tb testing.TB, n Name) Capability {
	tb.Helper()
	tier.Full(tb, string(n))
	dir, _ := os.Getwd()
	c := Probe(context.Background(), n, dir)
	if !c.Present {
		dockerenv.SkipOrFail(tb, c.Missing())
	}
	return c
}

// SkipOrFail stops a test that cannot run because c is missing, with why
// (what was tried): as Require does.
func SkipOrFail(tb testing.TB, c Capability, why string) {
	tb.Helper()
	if why != "" {
		c.Detail = why
	}
	if c.Provide == "" {
		c.Provide = provide[c.Name]
	}
	dockerenv.SkipOrFail(tb, c.Missing())
}
