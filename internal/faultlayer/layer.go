// Package faultlayer brings up and checks the fault layer: a Toxiproxy and
// the test-plane Postgres that holds the port-lease table, from containers,
// from in-process and local binaries, or from coordinates of a layer that
// is already running.
package faultlayer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/dbguard"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer/lease"
	"github.com/contested/contested/internal/runid"
	"github.com/contested/contested/internal/secret"
)

// Kind names a provider of the fault layer.
type Kind string

// The providers. Auto picks one and says why.
const (
	Auto       Kind = "auto"
	Containers Kind = "containers"
	Embedded   Kind = "embedded"
	External   Kind = "external"
)

// DefaultProxyPorts is the range published by the containers provider and
// assumed for an external layer that does not say otherwise.
const DefaultProxyPorts = "20000-20031"

// Sentinel errors callers map to exit codes.
var (
	// ErrConfig: the configuration is unusable (exit 2).
	ErrConfig = errors.New("bad fault-layer configuration")
	// ErrCannotRun: the layer could not be brought up or reached (exit 3).
	ErrCannotRun = errors.New("fault layer cannot run")
)

// Config says which layer to bring up. The zero value means auto with
// defaults; ConfigFromEnv fills it from the environment.
type Config struct {
	Kind             Kind
	ToxiproxyURL     string
	PostgresDSN      string
	ProxyPorts       string
	ProxyListenHost  string
	PostgresUpstream string
	PostgresDirect   string
	PostgresImage    string
	ToxiproxyImage   string
	PostgresBin      string
	RunID            string
	// SharedRunID says RunID may be used by other processes too (it came
	// from CONTESTED_RUN_ID, which `go test ./...` hands to every package).
	// A layer this process starts then gets the id with a random suffix, so
	// that no two layers carry one id and one's teardown never removes
	// another's resources. A layer attached to (external) keeps the id: a
	// battery child shares its parent's run on purpose.
	SharedRunID bool
	// NoWarm makes Up ignore the warm layer (go tool mage layer up) even
	// when auto would attach to it.
	NoWarm bool
	// Canonical are the databases no layer may be (the registry's [guard]
	// canonical_databases): a test plane that names or reaches one is
	// refused before anything is created in it (internal/dbguard).
	Canonical []string
	// Log receives progress lines; nil discards them.
	Log io.Writer

	// warmRecord, when set, makes a containers layer a warm one: its
	// resources carry reap.LabelWarm with this record's path.
	warmRecord string
}

// ConfigFromEnv reads the layer's CONTESTED_* variables (internal/envvar)
// and the run id (internal/runid: CONTESTED_RUN_ID, or a fresh one). It
// fails with ErrConfig on values that cannot work, before anything is
// started.
func ConfigFromEnv() (Config, error) {
	c := Config{
		Kind:             Kind(strings.TrimSpace(os.Getenv(envvar.Layer))),
		ToxiproxyURL:     strings.TrimSpace(os.Getenv(envvar.ToxiproxyURL)),
		PostgresDSN:      strings.TrimSpace(os.Getenv(envvar.PostgresDSN)),
		ProxyPorts:       strings.TrimSpace(os.Getenv(envvar.ProxyPorts)),
		ProxyListenHost:  strings.TrimSpace(os.Getenv(envvar.ProxyListenHost)),
		PostgresUpstream: strings.TrimSpace(os.Getenv(envvar.PostgresUpstream)),
		PostgresDirect:   strings.TrimSpace(os.Getenv(envvar.PostgresDirect)),
		PostgresImage:    strings.TrimSpace(os.Getenv(envvar.PostgresImage)),
		ToxiproxyImage:   strings.TrimSpace(os.Getenv(envvar.ToxiproxyImage)),
		PostgresBin:      strings.TrimSpace(os.Getenv(envvar.PostgresBin)),
	}
	var err error
	if c.RunID, c.SharedRunID, err = runid.FromEnv(); err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return c, c.validate()
}

func (c *Config) validate() error {
	if c.Kind == "" {
		c.Kind = Auto
	}
	switch c.Kind {
	case Auto, Containers, Embedded, External:
	default:
		return fmt.Errorf("%w: %s=%q is not one of auto, containers, embedded, external", ErrConfig, envvar.Layer, string(c.Kind))
	}
	if (c.ToxiproxyURL == "") != (c.PostgresDSN == "") && (c.Kind == Auto || c.Kind == External) {
		return fmt.Errorf("%w: %s and %s name an external layer together; set both or neither", ErrConfig, envvar.ToxiproxyURL, envvar.PostgresDSN)
	}
	if c.Kind == External && c.ToxiproxyURL == "" {
		return fmt.Errorf("%w: %s=external needs %s and %s", ErrConfig, envvar.Layer, envvar.ToxiproxyURL, envvar.PostgresDSN)
	}
	if c.ToxiproxyURL != "" {
		if _, err := toxiproxyBase(c.ToxiproxyURL); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrConfig, envvar.ToxiproxyURL, err)
		}
	}
	if c.PostgresDSN != "" {
		pc, err := pgxpool.ParseConfig(c.PostgresDSN)
		if err != nil {
			return fmt.Errorf("%w: %s does not parse: %s", ErrConfig, envvar.PostgresDSN, secret.ParseError(err))
		}
		if err := dbguard.CheckConfig(&pc.ConnConfig.Config, c.Canonical, envvar.PostgresDSN); err != nil {
			return fmt.Errorf("%w: %w; %s", ErrConfig, err, guardFix)
		}
	}
	if c.PostgresDirect != "" {
		if _, err := parseDirect(c.PostgresDirect); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, envvar.PostgresDirect, c.PostgresDirect, err)
		}
	}
	if c.ProxyPorts != "" {
		if _, err := ParseProxyPorts(c.ProxyPorts, "0.0.0.0", "127.0.0.1"); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, envvar.ProxyPorts, c.ProxyPorts, err)
		}
	}
	if c.PostgresBin != "" {
		if _, err := postgresBinaries(c.PostgresBin); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, envvar.PostgresBin, c.PostgresBin, err)
		}
	}
	if c.ProxyListenHost != "" {
		if _, err := listenAddr(c.ProxyListenHost); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, envvar.ProxyListenHost, c.ProxyListenHost, err)
		}
	}
	if err := runid.Check(c.RunID); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrConfig, envvar.RunID, err)
	}
	return nil
}

// guardFix says what to do about a test plane the database guard refused.
const guardFix = "the test plane (its lease and harness tables, victim databases and roles) needs a database of its own, never a service's real one nor postgres, template0 or template1: create one (CREATE DATABASE contested_plane) and name it in " + envvar.PostgresDSN

// listenAddr parses a proxy listen host: an IP address, or "localhost".
func listenAddr(host string) (netip.Addr, error) {
	if host == "localhost" {
		return netip.MustParseAddr("127.0.0.1"), nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("not an IP address (127.0.0.1 for a Toxiproxy on this host; 0.0.0.0 for one in a container that publishes its ports on 127.0.0.1)")
	}
	return a.Unmap(), nil
}

// toxiproxyBase normalizes a Toxiproxy URL ("host:port" or "http://host:port").
func toxiproxyBase(raw string) (*url.URL, error) {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q: scheme must be http", raw)
	}
	if u.Hostname() == "" || u.Port() == "" {
		return nil, fmt.Errorf("%q: want http://host:port", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

// Layer is a running fault layer and the coordinates to reach it.
type Layer struct {
	Kind   Kind
	Reason string // why this provider was chosen
	RunID  string

	ToxiproxyURL     string // control API, as the host reaches it
	PostgresDSN      string // the test-plane database, as the host reaches it
	PostgresUpstream string // Postgres as Toxiproxy reaches it
	// PostgresDirect is the test-plane Postgres on the layer's private
	// network (ip:port), "" when unknown; see direct.go.
	PostgresDirect  string
	ProxyListenHost string      // host part of proxy listen addresses
	Ports           []ProxyPort // leasable proxy ports

	// ToxiproxyContainer is the container we started for Toxiproxy, if any;
	// preflight inspects its published bindings.
	ToxiproxyContainer string
	// ToxiproxyDirect is Toxiproxy's IP on the layer's private network (the
	// Postgres container's, whose network namespace it shares), "" when
	// unknown; see direct.go.
	ToxiproxyDirect string
	// Network is the private Docker network of a containers layer, where
	// Postgres answers as "postgres" and Toxiproxy as "toxiproxy"; other
	// containers (the cluster rig's replicas) join it.
	Network string
	// Warm is the owner record of the warm layer this run attached to (nil
	// when it brought up its own). Close leaves an attached warm layer
	// running and cleans only what this run leased in it.
	Warm *WarmRecord

	// postgresContainer is the container we started for Postgres, if any.
	postgresContainer string
	// canonical are the databases the test plane may not be
	// (Config.Canonical); Identity refuses a server that reached one.
	canonical []string

	log     io.Writer
	direct  bool // the pool reaches Postgres at PostgresDirect
	kept    bool // a warm layer handed to its record: teardown leaves it
	pool    *pgxpool.Pool
	leases  *lease.Table
	closeMu sync.Mutex
	closers []func(context.Context) error
}

// Up brings up (or, for external, reaches) the layer cfg selects, checks
// that it is what it claims to be (Identity: Toxiproxy answers as
// Toxiproxy, its control API is on loopback, its proxies listen where only
// this host reaches them, the test-plane Postgres answers), and only then
// migrates the lease table and reclaims leases that dead runs left behind,
// which deletes their proxies. A layer that fails those checks is left
// untouched, and the error is a *PreflightError with the checks. On error
// or cancellation everything it started is torn down before it returns.
func Up(ctx context.Context, cfg Config) (_ *Layer, err error) {
	if cfg.RunID == "" {
		// A library caller that names no run gets a run of its own;
		// commands and test processes take theirs from internal/runenv.
		cfg.RunID, cfg.SharedRunID = runid.New(time.Now()), false
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if l := upWarm(ctx, cfg); l != nil {
		return l, nil
	}
	kind, reason, err := choose(ctx, cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Log, "fault layer: %s (%s)\n", kind, reason)
	if kind != External && cfg.SharedRunID {
		id := runid.Unique(cfg.RunID)
		fmt.Fprintf(cfg.Log, "fault layer: run id %s comes from %s and this process starts a layer of its own: its resources carry %s, so no other layer shares the id\n", cfg.RunID, envvar.RunID, id)
		cfg.RunID = id
	}
	l, err := start(ctx, cfg, kind)
	if err != nil && cfg.Kind == Auto && kind == Containers && ctx.Err() == nil {
		if _, berr := postgresBinaries(cfg.PostgresBin); berr == nil {
			reason = fmt.Sprintf("containers failed (%v); fell back to local binaries", firstLine(err.Error()))
			fmt.Fprintf(cfg.Log, "fault layer: %s\n", reason)
			kind = Embedded
			l, err = start(ctx, cfg, kind)
		}
	}
	if err != nil {
		return nil, err
	}
	l.Kind, l.Reason, l.RunID, l.log, l.canonical = kind, reason, cfg.RunID, cfg.Log, cfg.Canonical
	// The password the layer generated (or was given) is masked in
	// everything this process prints or saves from now on.
	secret.AddDSN(l.PostgresDSN)
	defer func() {
		if err != nil {
			l.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := l.open(); err != nil {
		return nil, err
	}
	if p := Identity(ctx, l); !p.OK() {
		return nil, &PreflightError{Preflight: p}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	if err := l.migrate(ctx); err != nil {
		return nil, err
	}
	if freed, err := l.leases.Reclaim(ctx); err != nil {
		fmt.Fprintf(cfg.Log, "fault layer: reclaiming stale leases: %v\n", err)
	} else if len(freed) > 0 {
		fmt.Fprintf(cfg.Log, "fault layer: reclaimed %d stale leases of dead runs\n", len(freed))
	}
	return l, nil
}

// upWarm attaches to the warm layer when auto would otherwise pick a
// provider itself (no CONTESTED_LAYER, no external coordinates, not
// NoWarm) and one is recorded, recreating a stale one first. The attached
// layer passes the identity checks and the required preflight, or it is
// not used: Up says why and brings up a layer of its own. Nil means no
// warm layer is used.
func upWarm(ctx context.Context, cfg Config) *Layer {
	if cfg.Kind != Auto || cfg.ToxiproxyURL != "" || cfg.NoWarm || cfg.warmRecord != "" {
		return nil
	}
	l, err := attachWarm(ctx, cfg)
	if err != nil {
		fmt.Fprintf(cfg.Log, "fault layer: the warm layer cannot be used (%v); bringing up a layer of its own\n", firstLine(err.Error()))
		return nil
	}
	if l == nil {
		return nil
	}
	l.RunID, l.log, l.canonical = cfg.RunID, cfg.Log, cfg.Canonical
	secret.AddDSN(l.PostgresDSN)
	fmt.Fprintf(cfg.Log, "fault layer: %s\n", l.Reason)
	refuse := func(why string) *Layer {
		l.Close(context.WithoutCancel(ctx))
		fmt.Fprintf(cfg.Log, "fault layer: the warm layer failed %s; bringing up a layer of its own (go tool mage layer status tells more)\n", why)
		return nil
	}
	if pc, err := pgxpool.ParseConfig(l.PostgresDSN); err != nil {
		return refuse("its record's DSN: " + secret.ParseError(err))
	} else if err := dbguard.CheckConfig(&pc.ConnConfig.Config, cfg.Canonical, "its record's DSN"); err != nil {
		return refuse("the database guard: " + err.Error())
	}
	if err := l.open(); err != nil {
		return refuse(firstLine(err.Error()))
	}
	if p := Identity(ctx, l); !p.OK() {
		return refuse("its identity checks: " + firstLine((&PreflightError{Preflight: p}).Error()))
	}
	if err := l.migrate(ctx); err != nil {
		return refuse(firstLine(err.Error()))
	}
	if p := RunPreflight(ctx, l); !p.OK() {
		return refuse("the required preflight: " + firstLine((&PreflightError{Preflight: p}).Error()))
	}
	l.onClose(l.cleanRun)
	if freed, err := l.leases.Reclaim(ctx); err != nil {
		fmt.Fprintf(cfg.Log, "fault layer: reclaiming stale leases: %v\n", err)
	} else if len(freed) > 0 {
		fmt.Fprintf(cfg.Log, "fault layer: reclaimed %d stale leases of dead runs\n", len(freed))
	}
	return l
}

// keep hands a warm layer to its record: from now on Close leaves its
// containers running.
func (l *Layer) keep() {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	l.kept = true
}

func (l *Layer) isKept() bool {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	return l.kept
}

// PreflightError is Up's refusal of a layer that failed its identity
// checks: nothing was created in it and nothing was deleted from it. It
// wraps ErrCannotRun.
type PreflightError struct {
	Preflight Preflight
}

func (e *PreflightError) Error() string {
	var parts []string
	for _, c := range e.Preflight.Failed() {
		parts = append(parts, fmt.Sprintf("%s: %s (fix: %s)", c.Name, c.Detail, c.Fix))
	}
	return fmt.Sprintf("%v: the layer failed preflight before anything was created or deleted in it: %s", ErrCannotRun, strings.Join(parts, "; "))
}

func (e *PreflightError) Unwrap() error { return ErrCannotRun }

func start(ctx context.Context, cfg Config, kind Kind) (*Layer, error) {
	switch kind {
	case Containers:
		return upContainers(ctx, cfg)
	case Embedded:
		return upEmbedded(ctx, cfg)
	default:
		return upExternal(ctx, cfg)
	}
}

// choose resolves Auto: coordinates in the environment mean external;
// otherwise containers when they can come up here (ContainersCanRun);
// otherwise local binaries.
func choose(ctx context.Context, cfg Config) (Kind, string, error) {
	if cfg.Kind != Auto {
		return cfg.Kind, envvar.Layer + "=" + string(cfg.Kind), nil
	}
	if cfg.ToxiproxyURL != "" {
		return External, envvar.ToxiproxyURL + " and " + envvar.PostgresDSN + " are set", nil
	}
	cerr := ContainersCanRun(ctx, cfg)
	if cerr == nil {
		return Containers, "a Docker engine answers and the images are at hand", nil
	}
	if ctx.Err() != nil {
		return "", "", cerr
	}
	why := firstLine(cerr.Error())
	if _, err := postgresBinaries(cfg.PostgresBin); err != nil {
		return "", "", fmt.Errorf("%w: %s, and %v", ErrCannotRun, why, err)
	}
	return Embedded, why + "; using local binaries", nil
}

// open makes the layer's pool to the test-plane Postgres. Connections are
// made on first use: Identity's Postgres check is the first.
func (l *Layer) open() error {
	cfg, err := pgxpool.ParseConfig(l.PostgresDSN)
	if err != nil {
		return fmt.Errorf("%w: parse the test-plane DSN: %s", ErrConfig, secret.ScrubString(err.Error()))
	}
	cfg.MaxConns = 8
	cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	l.direct = directRoute(&cfg.ConnConfig.Config, l.PostgresDirect)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return fmt.Errorf("%w: connect to the test-plane Postgres: %s", ErrCannotRun, secret.ScrubString(err.Error()))
	}
	l.pool = pool
	l.onClose(func(context.Context) error { pool.Close(); return nil })
	l.leases = lease.New(pool, portNumbers(l.Ports), lease.CleanerFunc(l.ClearPort), lease.WithRun(l.RunID), lease.WithLog(l.log))
	return nil
}

// migrate creates the lease table and its rows for this layer's ports. Up
// calls it only after Identity passed.
func (l *Layer) migrate(ctx context.Context) error {
	if err := lease.Migrate(ctx, l.pool, portNumbers(l.Ports)); err != nil {
		return fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	return nil
}

// onClose registers a teardown step; steps run in reverse order.
func (l *Layer) onClose(f func(context.Context) error) {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	l.closers = append(l.closers, f)
}

// Close tears down whatever this process started (nothing, for external)
// and closes connections. It is safe to call more than once.
func (l *Layer) Close(ctx context.Context) error {
	l.closeMu.Lock()
	closers := l.closers
	l.closers = nil
	l.closeMu.Unlock()
	var errs []error
	for i := len(closers) - 1; i >= 0; i-- {
		if err := closers[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DB returns the pool to the test-plane database.
func (l *Layer) DB() *pgxpool.Pool { return l.pool }

// Leases returns the port-lease table of this layer.
func (l *Layer) Leases() *lease.Table { return l.leases }

// Port returns the proxy port with lease key p.
func (l *Layer) Port(p int) (ProxyPort, bool) {
	for _, pp := range l.Ports {
		if pp.Port == p {
			return pp, true
		}
	}
	return ProxyPort{}, false
}

// Toxiproxy returns a client for the control API. Its User-Agent is not a
// browser's: Toxiproxy refuses those with 403.
func (l *Layer) Toxiproxy() *toxiproxy.Client {
	c := toxiproxy.NewClient(l.ToxiproxyURL)
	c.UserAgent = "contested"
	return c
}

// ClearPort deletes every proxy that listens on port. It is the lease
// table's cleaner: the second stage of cleanup for a reclaimed lease.
func (l *Layer) ClearPort(ctx context.Context, port int) error {
	proxies, err := l.Toxiproxy().Proxies()
	if err != nil {
		return fmt.Errorf("list proxies: %w", err)
	}
	for name, p := range proxies {
		_, ps, err := net.SplitHostPort(p.Listen)
		if err != nil || ps != strconv.Itoa(port) {
			continue
		}
		if err := p.Delete(); err != nil && !strings.Contains(err.Error(), "404") {
			return fmt.Errorf("delete proxy %s: %w", name, err)
		}
	}
	return nil
}

// Env returns the variables that hand this layer to a child process (a
// `go test` of the battery): the child sees it as an external layer.
func (l *Layer) Env() []string {
	return []string{
		envvar.Layer + "=" + string(External),
		envvar.ToxiproxyURL + "=" + l.ToxiproxyURL,
		envvar.PostgresDSN + "=" + l.PostgresDSN,
		envvar.ProxyPorts + "=" + FormatProxyPorts(l.Ports),
		envvar.ProxyListenHost + "=" + l.ProxyListenHost,
		envvar.PostgresUpstream + "=" + l.PostgresUpstream,
		envvar.PostgresDirect + "=" + l.PostgresDirect,
		envvar.RunID + "=" + l.RunID,
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
