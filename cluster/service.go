package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/images"
)

// Service is an adopter's service as the rig runs it: how to build it and
// run its replicas (Spec), and how to prepare its database, drive it and
// judge it (Setup). Implement it next to the service (a test file is
// enough), run the rig from a Go test with clustertest.Run, and name that test in the
// registry's [cluster] table so that `go tool mage cluster-tests` runs it.
type Service interface {
	// Spec says how to build the service and run its replicas.
	Spec() Spec
	// Setup prepares the service's database before any replica starts
	// (its schema and initial data) and returns the workload the legs
	// drive through the replicas and the oracle that judges each leg. db
	// is connected to the service's own database as the test plane's
	// superuser; the replicas get a role that may only read and write the
	// tables and sequences that exist when Setup returns.
	Setup(ctx context.Context, db *pgxpool.Pool) (Workload, Oracle, error)
}

// Spec is how the rig builds the service and runs its replicas.
type Spec struct {
	// Name names the rig's resources: the image contested.local/<Name>:rig,
	// the database <Name>_rig and the replicas' role <Name>_rig_service.
	// Lower-case letters and digits, starting with a letter.
	Name string
	// Package is the Go package of the service's command as go build
	// takes it in the module root, e.g. "./examples/ledger/cmd/ledger". It
	// is built static on scratch for containers, and as is for local
	// processes.
	Package string
	// Surface is the registered surface the legs' fault records name
	// (class "cluster").
	Surface string
	// Replicas is how many replicas run when Options.Replicas does not say
	// (3 to 9; default 3).
	Replicas int
	// Args is replica r's command line, without the program name. It must
	// make the replica read its DSN from r.DSNFile, record its work under
	// r.Name and serve its health endpoint on r.Health.
	Args func(r Replica) []string
	// HealthPath is the path of the HTTP health endpoint every replica
	// serves on Replica.Health (default "/healthz"). The rig waits for it
	// to answer 200 after every start of a replica.
	HealthPath string
	// SecretEnv names environment variables that carry credentials to the
	// service besides contested's own: local replicas do not inherit them.
	SecretEnv []string
}

// Replica is what the rig gives one replica's command line.
type Replica struct {
	Index int    // from 0
	Name  string // replica-1, replica-2, …: what the replica records its work under
	// DSNFile holds the replica's DSN, in a file of mode 0600: the
	// service role, through the replica's own proxy, to the service's
	// database. The password is on no command line and in no environment.
	DSNFile string
	// Health is the host:port the replica's health endpoint listens on.
	Health string
}

// Workload is the traffic the legs stream through the replicas, and the
// counts the rig watches it by. Op is called from one goroutine while the
// others are called from another.
type Workload interface {
	// Plan prepares a leg's n operations. seq numbers the legs from 1 (a
	// seed); the operations carry the leg's name, so Done can count them.
	Plan(leg string, seq, n int)
	// Op performs operation i of the planned leg once and returns once
	// the service has acknowledged it; the rig retries an error, so an
	// operation must be safe to repeat.
	Op(ctx context.Context, i int) error
	// Done is how many of leg's operations the replicas have completed.
	Done(ctx context.Context, leg string) (int, error)
	// DoneBy is how many operations the replica called replica completed
	// in the window (from, to]; a zero to means up to now.
	DoneBy(ctx context.Context, replica string, from, to time.Time) (int, error)
	// Pending is how many acknowledged operations the replicas have yet to
	// complete: zero is quiescence.
	Pending(ctx context.Context) (int, error)
}

// Oracle judges the service at quiescence after each leg, over every
// operation of every leg so far (the legs share one database).
type Oracle interface {
	// Judge checks the service's promises over its database and says,
	// per oracle, whether each held.
	Judge(ctx context.Context) ([]OracleResult, error)
}

// OracleResult is one oracle's verdict on a leg.
type OracleResult struct {
	Name   string `json:"name"`   // the oracle: no-lost-ack, exactly-once, …
	Held   bool   `json:"held"`   // the promise held
	Detail string `json:"detail"` // what it found, in words
}

// Replica counts the rig runs.
const (
	MinReplicas = envvar.MinReplicas
	MaxReplicas = envvar.MaxReplicas
)

// DefaultHealthPath is Spec.HealthPath's default.
const DefaultHealthPath = "/healthz"

// settle fills the spec's and the options' defaults and refuses what
// cannot work, with ErrUsage.
func settle(spec Spec, opts Options) (Spec, Options, error) {
	var problems []string
	if images.CheckServiceName(spec.Name) != nil {
		problems = append(problems, fmt.Sprintf("name %q must be lower-case letters and digits, starting with a letter (at most 32)", spec.Name))
	}
	if strings.TrimSpace(spec.Package) == "" {
		problems = append(problems, "no package: name the Go package of the service's command, e.g. \"./cmd/service\"")
	}
	if spec.Surface == "" {
		problems = append(problems, "no surface: name the registered surface its fault records belong to")
	}
	if spec.Args == nil {
		problems = append(problems, "no Args: the replicas' command line")
	}
	if spec.HealthPath == "" {
		spec.HealthPath = DefaultHealthPath
	}
	if !strings.HasPrefix(spec.HealthPath, "/") {
		problems = append(problems, fmt.Sprintf("health path %q must start with /", spec.HealthPath))
	}
	if len(problems) > 0 {
		return spec, opts, fmt.Errorf("%w: the service's spec: %s", ErrUsage, strings.Join(problems, "; "))
	}
	if opts.Replicas == 0 {
		opts.Replicas = spec.Replicas
	}
	if opts.Replicas == 0 {
		opts.Replicas = MinReplicas
	}
	if opts.Replicas < MinReplicas || opts.Replicas > MaxReplicas {
		return spec, opts, fmt.Errorf("%w: %d replicas; the rig runs between %d and %d", ErrUsage, opts.Replicas, MinReplicas, MaxReplicas)
	}
	if opts.Ops == 0 {
		opts.Ops = 240
	}
	if opts.HealthWait == 0 {
		opts.HealthWait = time.Minute
	}
	if opts.Level == 0 {
		opts.Level = 1
	}
	if opts.Level < 1 || opts.Level > 3 {
		return spec, opts, fmt.Errorf("%w: level %d; the levels are 1 (sunny), 2 (stormy) and 3 (radioactive)", ErrUsage, opts.Level)
	}
	if opts.Replay == "" {
		lv := ""
		if opts.Level > 1 {
			lv = fmt.Sprintf("%s=%d ", envvar.Level, opts.Level)
		}
		opts.Replay = fmt.Sprintf("%s=%d %sgo tool mage cluster-tests", envvar.Seed, opts.Seed, lv)
	}
	return spec, opts, nil
}

// database is the service's database on the rig's Postgres.
func (s Spec) database() string { return s.Name + "_rig" }

// role is the login role the replicas connect as.
func (s Spec) role() string { return s.Name + "_rig_service" }

// image is the rig's tag for the service's image.
func (s Spec) image() string { return images.ServiceTag(s.Name) }
