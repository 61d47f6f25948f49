package faultlayer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/testcontainers/testcontainers-go"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/dbguard"
	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/flock"
	"github.com/contested/contested/internal/private"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/runid"
	"github.com/contested/contested/internal/secret"
)

// WarmSchema is the schema of the warm layer's owner record.
const WarmSchema = "contested/warm-layer@1"

// ErrNoWarm reports that no warm layer is recorded.
var ErrNoWarm = errors.New("no warm layer")

// WarmRecord is the owner record of a warm layer. It holds the test-plane
// DSN with its password, so the file is readable by its user only.
type WarmRecord struct {
	Schema             string      `json:"schema"`
	RunID              string      `json:"run_id"`
	Created            time.Time   `json:"created"`
	UID                int         `json:"uid"`
	ToxiproxyURL       string      `json:"toxiproxy_url"`
	PostgresDSN        string      `json:"postgres_dsn"`
	PostgresUpstream   string      `json:"postgres_upstream"`
	PostgresDirect     string      `json:"postgres_direct,omitempty"`
	ProxyListenHost    string      `json:"proxy_listen_host"`
	Ports              []ProxyPort `json:"ports"`
	Network            string      `json:"network"`
	ToxiproxyContainer string      `json:"toxiproxy_container"`
	ToxiproxyDirect    string      `json:"toxiproxy_direct,omitempty"`
	PostgresImage      string      `json:"postgres_image"`
	PostgresImageID    string      `json:"postgres_image_id"`
	ToxiproxyImage     string      `json:"toxiproxy_image"`
	ToxiproxyImageID   string      `json:"toxiproxy_image_id"`
	// StartedIn and Module say whose layer it is: the checkout (module
	// root) and module that started it; empty in an older record.
	StartedIn string `json:"started_in,omitempty"`
	Module    string `json:"module,omitempty"`
}

// WarmRecordPath is where the warm layer's owner record is kept:
// warm-layer.json in the contested directory of the user's cache directory
// (os.UserCacheDir: $XDG_CACHE_HOME, else ~/.cache). It is the one file
// contested writes outside the results directory.
func WarmRecordPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the user cache directory for the warm layer's record: %w", err)
	}
	return filepath.Join(dir, "contested", "warm-layer.json"), nil
}

// readWarm reads the record at path, when it is the caller's own: a
// regular file of this user's, mode 0600 (no one else may read it: it
// holds the test plane's password), in a directory only this user can
// enter, written for this user. It follows no link and never waits on a
// FIFO. ErrNoWarm when there is none; an error wrapping ErrWarmRecord when
// it is refused.
func readWarm(path string) (WarmRecord, error) {
	var rec WarmRecord
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return rec, ErrNoWarm
	}
	b, err := private.ReadFile(path, 0o077, maxWarmRecord)
	if errors.Is(err, private.ErrNotPrivate) {
		return rec, refuseWarm(path, err)
	}
	if err != nil {
		return rec, fmt.Errorf("read the warm layer's record: %w", err)
	}
	if rec, err = parseWarm(path, b); err != nil {
		return rec, err
	}
	if rec.UID != os.Getuid() {
		return rec, refuseWarm(path, fmt.Errorf("it was written for uid %d, not this user (uid %d)", rec.UID, os.Getuid()))
	}
	return rec, nil
}

// readWarmToRemove reads the record at path for layer down, which removes
// the layer a record names whatever its mode: the containers it selects
// carry this record's path in their warm label, so they are this user's
// layer in any case. It still follows no link, reads regular files only
// and caps the size.
func readWarmToRemove(path string) (WarmRecord, error) {
	b, err := atomicfile.Load(path, maxWarmRecord)
	if errors.Is(err, os.ErrNotExist) {
		return WarmRecord{}, ErrNoWarm
	}
	if err != nil {
		return WarmRecord{}, fmt.Errorf("read the warm layer's record: %w", err)
	}
	return parseWarm(path, b)
}

func parseWarm(path string, b []byte) (WarmRecord, error) {
	var rec WarmRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Schema != WarmSchema || rec.RunID == "" {
		return rec, fmt.Errorf("%s is not a warm layer record (%v); remove it with go tool mage layer down", path, err)
	}
	return rec, nil
}

// writeWarm writes the record atomically, readable by its user only, in a
// directory only its user can enter: one this user owns is made so (0700)
// before a password is written into it; one another user owns is refused.
func writeWarm(path string, rec WarmRecord) error {
	dir := filepath.Dir(path)
	if err := private.MkdirAll(dir); err != nil {
		fi, lerr := os.Lstat(dir)
		if !errors.Is(err, private.ErrNotPrivate) || lerr != nil || !fi.IsDir() || !private.Owned(fi) {
			return fmt.Errorf("write the warm layer's record: %w", err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("write the warm layer's record: %w", err)
		}
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".warm-layer-*.json")
	if err != nil {
		return fmt.Errorf("write the warm layer's record: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write the warm layer's record: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the warm layer's record: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write the warm layer's record: %w", err)
	}
	return nil
}

// lockWarm serializes whatever creates, recreates or removes the warm
// layer, across processes, on a lock file beside the record. The kernel
// drops the lock when the process dies.
func lockWarm(ctx context.Context, path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return flock.Lock(ctx, path+".lock", 0o600, 50*time.Millisecond)
}

// WarmUp brings up the warm layer, or leaves the current one as it is
// (reused true); a stale one is removed and replaced. It holds the warm
// lock throughout. On error or cancellation nothing of a new layer is left
// running, or what is left carries the warm label without a record, which
// the next sweep removes.
func WarmUp(ctx context.Context, cfg Config) (rec WarmRecord, reused bool, err error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	path, err := WarmRecordPath()
	if err != nil {
		return rec, false, err
	}
	// A recreation tears the current layer down: never under a degraded stage.
	unstage, err := HoldStage(ctx, "layer up", cfg.Log)
	if err != nil {
		return rec, false, fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	defer unstage()
	unlock, err := lockWarm(ctx, path)
	if err != nil {
		return rec, false, fmt.Errorf("%w: lock the warm layer: %v", ErrCannotRun, err)
	}
	defer unlock()
	dockerenv.Configure(nil)
	cli, err := dockerenv.Connect(ctx)
	if err != nil {
		return rec, false, fmt.Errorf("%w: the warm layer runs on containers: %v", ErrCannotRun, err)
	}
	defer cli.Close()
	return warmUpLocked(ctx, cli, cfg, path)
}

func warmUpLocked(ctx context.Context, cli *testcontainers.DockerClient, cfg Config, path string) (WarmRecord, bool, error) {
	old, err := readWarm(path)
	if err == nil {
		// A record naming a database the guard lists is refused as it is,
		// neither attached to nor replaced: someone pointed it there.
		err = guardWarm(old, cfg.Canonical)
	}
	switch {
	case err == nil:
		why := warmStale(ctx, cli, cfg, old, true)
		if why == "" {
			// Coordinates are attached to only as a fresh bring-up
			// would derive them from its containers.
			if bad := verifyWarm(ctx, cli, path, old); bad != "" {
				why = "its record does not match its containers: " + bad
			}
		}
		if why == "" {
			return old, true, nil
		}
		fmt.Fprintf(cfg.Log, "warm layer: the one started %s ago is stale (%s); recreating it\n", age(old.Created), why)
		if _, err := removeWarm(ctx, cli, path, old.RunID, cfg.Log); err != nil {
			return old, false, err
		}
	case !errors.Is(err, ErrNoWarm):
		return old, false, err
	}
	cfg.Kind, cfg.RunID, cfg.SharedRunID, cfg.warmRecord = Containers, runid.New(time.Now()), false, path
	cfg.ToxiproxyURL, cfg.PostgresDSN = "", ""
	l, err := Up(ctx, cfg)
	if err != nil {
		return WarmRecord{}, false, err
	}
	defer l.Close(context.WithoutCancel(ctx))
	quiet := cfg
	quiet.Log = io.Discard // Up said which images it started
	pg, tp, err := containerImages(ctx, cli, quiet)
	if err != nil {
		return WarmRecord{}, false, err
	}
	rec := WarmRecord{
		Schema: WarmSchema, RunID: l.RunID, Created: time.Now().UTC(), UID: os.Getuid(),
		ToxiproxyURL: l.ToxiproxyURL, PostgresDSN: l.PostgresDSN, PostgresUpstream: l.PostgresUpstream,
		PostgresDirect: l.PostgresDirect, ProxyListenHost: l.ProxyListenHost, Ports: l.Ports, Network: l.Network, ToxiproxyContainer: l.ToxiproxyContainer,
		ToxiproxyDirect: l.ToxiproxyDirect,
		PostgresImage:   pg, PostgresImageID: imageID(ctx, cli, pg), ToxiproxyImage: tp, ToxiproxyImageID: imageID(ctx, cli, tp),
	}
	rec.StartedIn, rec.Module = startedIn()
	if err := ctx.Err(); err != nil {
		return rec, false, fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	if err := writeWarm(path, rec); err != nil {
		return rec, false, err
	}
	// From here the layer is the record's: this process's teardown leaves it.
	l.keep()
	fmt.Fprintf(cfg.Log, "warm layer: up: run %s, Toxiproxy %s, Postgres %s; record %s\n", rec.RunID, rec.ToxiproxyURL, secret.ScrubString(rec.PostgresDSN), path)
	return rec, false, nil
}

// guardWarm refuses a record whose test-plane DSN names a database the
// registry's [guard] canonical_databases lists (ErrConfig).
func guardWarm(rec WarmRecord, canonical []string) error {
	pc, err := pgxpool.ParseConfig(rec.PostgresDSN)
	if err != nil {
		return fmt.Errorf("%w: the warm layer's record: its DSN does not parse (%s); remove it with go tool mage layer down", ErrConfig, secret.ParseError(err))
	}
	if err := dbguard.CheckConfig(&pc.ConnConfig.Config, canonical, "the warm layer's record"); err != nil {
		return fmt.Errorf("%w: %w; %s: remove it with go tool mage layer down", ErrConfig, err, guardFix)
	}
	return nil
}

// WarmDown removes the warm layer: its containers and network, whatever
// else carries the warm label and no record holds, and the record. It
// waits first for a degraded stage that holds the stage lock (HoldStage).
func WarmDown(ctx context.Context, w io.Writer) (reap.Swept, error) {
	path, err := WarmRecordPath()
	if err != nil {
		return reap.Swept{}, err
	}
	// Waits for a degraded stage running on the layer: it never loses its
	// stack mid-run.
	unstage, err := HoldStage(ctx, "layer down", w)
	if err != nil {
		return reap.Swept{}, err
	}
	defer unstage()
	unlock, err := lockWarm(ctx, path)
	if err != nil {
		return reap.Swept{}, fmt.Errorf("lock the warm layer: %w", err)
	}
	defer unlock()
	rec, rerr := readWarmToRemove(path)
	if rerr != nil && !errors.Is(rerr, ErrNoWarm) {
		fmt.Fprintf(w, "warm layer: %v; removing it\n", rerr)
	}
	cli, err := dockerenv.Connect(ctx)
	if err != nil {
		return reap.Swept{}, fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	defer cli.Close()
	return removeWarm(ctx, cli, path, rec.RunID, w)
}

// removeWarm removes the record at path and every resource of the warm
// layer of run, then (best effort) warm-labelled resources that no record
// holds and whose creator is gone: what an interrupted up left.
func removeWarm(ctx context.Context, cli *testcontainers.DockerClient, path, run string, w io.Writer) (reap.Swept, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return reap.Swept{}, fmt.Errorf("remove the warm layer's record: %w", err)
	}
	var swept reap.Swept
	if run != "" {
		var err error
		swept, err = reap.Sweep(ctx, cli, func(labels map[string]string) (bool, string) {
			return labels[reap.LabelWarm] == path && labels[reap.LabelRun] == run, ""
		}, w)
		if err != nil {
			return swept, fmt.Errorf("%w: remove the warm layer: %v", ErrCannotRun, err)
		}
	}
	orphaned := reap.Orphaned(rolePrefix)
	more, err := reap.Sweep(ctx, cli, func(labels map[string]string) (bool, string) {
		if labels[reap.LabelWarm] == "" {
			return false, ""
		}
		return orphaned(labels)
	}, w)
	if err != nil {
		fmt.Fprintf(w, "warm layer: removing what interrupted warm layers left: %v\n", err)
	}
	swept.Containers = append(swept.Containers, more.Containers...)
	swept.Networks = append(swept.Networks, more.Networks...)
	swept.Volumes = append(swept.Volumes, more.Volumes...)
	return swept, nil
}

// attachWarm returns a view of the recorded warm layer for this run, or
// nil when there is none (no record: no Docker call at all). A stale one
// is recreated first. The caller runs the identity checks and preflight.
func attachWarm(ctx context.Context, cfg Config) (*Layer, error) {
	path, err := WarmRecordPath()
	if err != nil {
		return nil, nil
	}
	if _, err := os.Lstat(path); err != nil {
		return nil, nil
	}
	unlock, err := lockWarm(ctx, path)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := readWarm(path)
	if err != nil {
		if errors.Is(err, ErrNoWarm) {
			return nil, nil
		}
		return nil, err
	}
	dockerenv.Configure(nil)
	cli, err := dockerenv.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("the warm layer runs on containers and the Docker engine does not answer: %v", err)
	}
	defer cli.Close()
	wcfg := cfg
	wcfg.Log = cfg.Log
	rec, reused, err := warmUpLocked(ctx, cli, wcfg, path)
	if errors.Is(err, ErrConfig) {
		return nil, err // the record is refused, not stale
	}
	if err != nil {
		return nil, fmt.Errorf("recreate the stale warm layer: %w", err)
	}
	how := "attached to the warm layer"
	if !reused {
		how = "attached to the warm layer recreated now"
	}
	how += ", " + rec.Whose()
	l := &Layer{
		Kind:               Containers,
		Reason:             fmt.Sprintf("%s (go tool mage layer up; run %s, up %s, images %s and %s)", how, rec.RunID, age(rec.Created), rec.PostgresImage, rec.ToxiproxyImage),
		ToxiproxyURL:       rec.ToxiproxyURL,
		PostgresDSN:        rec.PostgresDSN,
		PostgresUpstream:   rec.PostgresUpstream,
		PostgresDirect:     rec.PostgresDirect,
		ProxyListenHost:    rec.ProxyListenHost,
		Ports:              rec.Ports,
		ToxiproxyContainer: rec.ToxiproxyContainer,
		ToxiproxyDirect:    rec.ToxiproxyDirect,
		Network:            rec.Network,
		Warm:               &rec,
	}
	return l, nil
}

// cleanRun is an attached warm layer's teardown: the leases this run still
// holds are released and their proxies deleted, so that what one run
// leaves never reaches the next; the layer stays up.
func (l *Layer) cleanRun(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	held, err := l.leases.Held(ctx)
	if err != nil {
		return fmt.Errorf("list this run's leases on the warm layer: %w", err)
	}
	var errs []error
	for _, h := range held {
		if h.Run != l.RunID {
			continue
		}
		if err := l.ClearPort(ctx, h.Port); err != nil {
			errs = append(errs, err)
		}
		if _, err := l.leases.Release(ctx, h); err != nil {
			errs = append(errs, fmt.Errorf("release port %d: %w", h.Port, err))
		}
	}
	return errors.Join(errs...)
}
