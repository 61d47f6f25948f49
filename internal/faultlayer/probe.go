package faultlayer

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/images"
)

// ConfigFor returns the configuration of a layer of kind that this process
// brings up itself, with the images (CONTESTED_PG_IMAGE,
// CONTESTED_TOXIPROXY_IMAGE) and Postgres binaries (CONTESTED_PG_BIN) the
// environment names. The coordinates of a layer the environment hands down
// are left out: a battery run by validate sees validate's layer as
// external, and a test or rig that brings up a layer of its own must not
// inherit them.
func ConfigFor(kind Kind) Config {
	return Config{
		Kind:           kind,
		PostgresImage:  strings.TrimSpace(os.Getenv(envvar.PostgresImage)),
		ToxiproxyImage: strings.TrimSpace(os.Getenv(envvar.ToxiproxyImage)),
		PostgresBin:    strings.TrimSpace(os.Getenv(envvar.PostgresBin)),
	}
}

// probe is one cached answer of ContainersCanRun. mu serializes the
// callers that ask the same question, so the images are made once.
type probe struct {
	mu   sync.Mutex
	done bool
	err  error
}

var (
	probesMu sync.Mutex
	probes   = map[string]*probe{}
)

// ContainersCanRun reports whether the containers provider can come up
// here with cfg's images: a Docker engine answers, and the Postgres and
// Toxiproxy images are present or can be pulled or built now. It returns
// nil when they can, and otherwise an error that is ErrCannotRun and says
// what is missing ("containers cannot come up here: postgres image: …").
//
// This is the one place that decides it: Up's auto choice, the cluster rig
// and the tests that need containers all ask here. Making an image is the
// expensive part and is work a containers bring-up does anyway (the engine
// then caches the image by tag), so the check costs a bring-up that
// follows it nothing. The answer is computed once per process for each
// engine, pair of images and Postgres installation the image is built
// from; an answer cut short by ctx is not kept.
func ContainersCanRun(ctx context.Context, cfg Config) error {
	key := strings.Join([]string{os.Getenv("DOCKER_HOST"), cfg.PostgresImage, cfg.ToxiproxyImage, os.Getenv(envvar.PostgresBin)}, "\x00")
	probesMu.Lock()
	p, ok := probes[key]
	if !ok {
		p = &probe{}
		probes[key] = p
	}
	probesMu.Unlock()

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return p.err
	}
	err := containersCanRun(ctx, cfg)
	if err == nil || ctx.Err() == nil {
		p.done, p.err = true, err
	}
	return err
}

func containersCanRun(ctx context.Context, cfg Config) error {
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	cli, err := dockerenv.Connect(ctx)
	if err != nil {
		return noContainers{err}
	}
	defer cli.Close()
	if _, err := images.Postgres().Ensure(ctx, cli, cfg.PostgresImage, log); err != nil {
		return noContainers{fmt.Errorf("postgres image: %w", err)}
	}
	if _, err := images.Toxiproxy().Ensure(ctx, cli, cfg.ToxiproxyImage, log); err != nil {
		return noContainers{fmt.Errorf("toxiproxy image: %w", err)}
	}
	return nil
}

// noContainers is ContainersCanRun's answer when they cannot: it reads as
// what is missing and is ErrCannotRun for callers that map it to exit 3.
type noContainers struct{ err error }

func (e noContainers) Error() string   { return "containers cannot come up here: " + e.err.Error() }
func (e noContainers) Unwrap() []error { return []error{ErrCannotRun, e.err} }
