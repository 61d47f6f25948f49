// Package images provides the container images the fault layer runs, building
// them locally when no registry can be reached: Toxiproxy from the Go module
// this project depends on, on scratch, and Postgres from the Debian packages
// the host's apt sources point at. Built images are cached by tag.
package images

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/flock"
)

// Docker is the part of the Docker API this package uses.
type Docker interface {
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ImagePull(ctx context.Context, ref string, options client.ImagePullOptions) (client.ImagePullResponse, error)
	ImageBuild(ctx context.Context, buildContext io.Reader, options client.ImageBuildOptions) (client.ImageBuildResult, error)
	ImageImport(ctx context.Context, source client.ImageImportSource, ref string, options client.ImageImportOptions) (client.ImageImportResult, error)
}

var _ Docker = (*client.Client)(nil)

// ErrUnavailable reports an image that is not present, cannot be pulled and
// cannot be built here.
var ErrUnavailable = errors.New("image unavailable")

// Image is one image the fault layer needs: the upstream reference used by
// default, and the tag of the locally built equivalent.
type Image struct {
	Name     string // "toxiproxy" or "postgres"
	Upstream string // pulled when a registry answers
	Local    string // built here when it does not
	// How says how the local image is built, and why that way; it is
	// printed when a build starts.
	How   string
	build func(ctx context.Context, d Docker, tag string, log io.Writer) error
}

// toxiproxyModule is the module the Toxiproxy image is built from; its
// version is the one this binary was built with.
const toxiproxyModule = "github.com/Shopify/toxiproxy/v2"

// ToxiproxyVersion returns the version of the Toxiproxy module linked into
// this binary (for example "v2.12.0").
func ToxiproxyVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == toxiproxyModule {
				if m.Replace != nil && m.Replace.Version != "" {
					return m.Replace.Version
				}
				return m.Version
			}
		}
	}
	return "v2.12.0"
}

// Toxiproxy describes the Toxiproxy image.
func Toxiproxy() Image {
	v := strings.TrimPrefix(ToxiproxyVersion(), "v")
	return Image{
		Name:     "toxiproxy",
		Upstream: "ghcr.io/shopify/toxiproxy:" + v,
		Local:    "contested.local/toxiproxy:" + v,
		How:      "compiled from " + toxiproxyModule + "@" + ToxiproxyVersion() + " (the version in go.mod), on scratch",
		build:    buildToxiproxy,
	}
}

// Postgres describes the Postgres image. Its local equivalent is built
// from the Postgres installed on this machine when there is one (no system
// package needed; the tag carries a digest of the recipe and the host's
// version, so a changed recipe or an upgraded host builds a fresh image);
// otherwise with debootstrap from the host's apt mirror, when debootstrap
// is installed. How says which, and why.
func Postgres() Image {
	in, herr := PostgresInstallation("")
	if herr == nil {
		r := hostRecipe{in}
		return Image{Name: "postgres", Upstream: "postgres:" + in.Major, Local: r.tag(), How: r.describe(), build: r.build}
	}
	im := Image{Name: "postgres", Upstream: "postgres:15", Local: "contested.local/postgres:debootstrap", build: buildDebootstrap}
	src, serr := HostAptSource()
	if serr == nil {
		im.Local = "contested.local/postgres:" + src.Suite
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		im.How = fmt.Sprintf("cannot be built here: no local Postgres (%v), and debootstrap is not installed", herr)
		im.build = func(context.Context, Docker, string, io.Writer) error {
			return fmt.Errorf("no local Postgres to build the image from (%v), and debootstrap is not installed: install postgresql (apt-get install postgresql) or debootstrap, or set CONTESTED_PG_IMAGE to an image already loaded in the engine", herr)
		}
		return im
	}
	im.How = fmt.Sprintf("with debootstrap from the host's apt mirror, since no local Postgres was found (%v)", herr)
	return im
}

// substituted holds the substitutions Ensure has announced: a run checks
// the images before it brings a layer up and again as it does, and the
// same line twice says nothing new.
var substituted sync.Map

// Ensure returns a reference to an image equivalent to want that is present
// in the engine, in this order: want itself when present; the locally built
// equivalent when want is this image's upstream or local reference and the
// local one is cached; want pulled from its registry; the local equivalent
// built now. A reference that is neither this image's upstream nor its local
// tag is only looked up and pulled, never substituted.
func (im Image) Ensure(ctx context.Context, d Docker, want string, log io.Writer) (string, error) {
	if want == "" {
		want = im.Upstream
	}
	if present(ctx, d, want) {
		return want, nil
	}
	known := want == im.Upstream || want == im.Local
	if known && present(ctx, d, im.Local) {
		if _, said := substituted.LoadOrStore(want+" "+im.Local, true); !said {
			fmt.Fprintf(log, "images: %s is not present; using the locally built %s\n", want, im.Local)
		}
		return im.Local, nil
	}
	if want != im.Local {
		perr := pull(ctx, d, want)
		if perr == nil {
			fmt.Fprintf(log, "images: pulled %s\n", want)
			return want, nil
		}
		if !known {
			return "", fmt.Errorf("%w: %s is not present and cannot be pulled (%v); load it with docker load, or unset the variable that names it to use the locally built %s", ErrUnavailable, want, perr, im.Local)
		}
		fmt.Fprintf(log, "images: cannot pull %s (%v); building %s locally\n", want, firstLine(perr.Error()), im.Local)
	}
	if err := im.Build(ctx, d, log); err != nil {
		return "", err
	}
	return im.Local, nil
}

// Build builds the local image unless it is already cached. Concurrent
// builders on this host, in any process, serialize on a lock file, and the
// ones that waited find the image cached.
func (im Image) Build(ctx context.Context, d Docker, log io.Writer) error {
	unlock, err := lock(ctx, im.Name)
	if err != nil {
		return fmt.Errorf("lock %s image build: %w", im.Name, err)
	}
	defer unlock()
	if present(ctx, d, im.Local) {
		return nil
	}
	start := time.Now()
	fmt.Fprintf(log, "images: building %s %s\n", im.Local, im.How)
	if err := im.build(ctx, d, im.Local, log); err != nil {
		return fmt.Errorf("%w: build %s: %w", ErrUnavailable, im.Local, err)
	}
	fmt.Fprintf(log, "images: built %s in %s\n", im.Local, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// Present reports whether ref is in the engine's image store.
func Present(ctx context.Context, d Docker, ref string) bool { return present(ctx, d, ref) }

func present(ctx context.Context, d Docker, ref string) bool {
	_, err := d.ImageInspect(ctx, ref)
	return err == nil
}

func pull(ctx context.Context, d Docker, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	r, err := d.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Wait(ctx)
}

// lock takes an exclusive flock on a per-image file in the temp directory.
// The kernel drops it when the process dies, so a killed build never wedges
// the next one.
func lock(ctx context.Context, name string) (func(), error) {
	return flock.Lock(ctx, filepath.Join(os.TempDir(), "contested-image-"+name+".lock"), 0o644, 500*time.Millisecond)
}

// drainJSON reads a Docker JSON message stream (build or import output),
// forwards its text lines to log with a prefix and returns the first error
// message the stream carried.
func drainJSON(r io.Reader, log io.Writer, prefix string) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Stream      string `json:"stream"`
			Status      string `json:"status"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read docker output: %w", err)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
		if m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		for _, s := range []string{m.Stream, m.Status} {
			sc := bufio.NewScanner(strings.NewReader(s))
			for sc.Scan() {
				if line := strings.TrimSpace(sc.Text()); line != "" {
					fmt.Fprintf(log, "%s%s\n", prefix, line)
				}
			}
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// IsNotFound reports whether err is the engine's "no such object".
func IsNotFound(err error) bool { return cerrdefs.IsNotFound(err) }
