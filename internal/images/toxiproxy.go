package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/moby/moby/client"
)

const toxiproxyDockerfile = `FROM scratch
COPY toxiproxy-server /toxiproxy
EXPOSE 8474
ENTRYPOINT ["/toxiproxy"]
CMD ["-host=0.0.0.0"]
`

// buildToxiproxy compiles the Toxiproxy server of the module version this
// binary links, statically, in a scratch module of its own (so it works from
// any adopter's working directory), and builds a scratch image around it.
func buildToxiproxy(ctx context.Context, d Docker, tag string, log io.Writer) error {
	version := ToxiproxyVersion()
	dir, err := os.MkdirTemp("", "contested-toxiproxy-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	env := append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	steps := [][]string{
		{"go", "mod", "init", "contested.local/toxiproxy-build"},
		{"go", "get", toxiproxyModule + "@" + version},
		{"go", "build", "-trimpath", "-ldflags", "-s -w -X " + toxiproxyModule + ".Version=" + strings.TrimPrefix(version, "v"),
			"-o", "toxiproxy-server", toxiproxyModule + "/cmd/server"},
	}
	fmt.Fprintf(log, "images: compiling %s/cmd/server@%s (CGO_ENABLED=0)\n", toxiproxyModule, version)
	for _, args := range steps {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	bin, err := os.ReadFile(filepath.Join(dir, "toxiproxy-server"))
	if err != nil {
		return err
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte(toxiproxyDockerfile)},
		{"toxiproxy-server", 0o755, bin},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}

	fmt.Fprintf(log, "images: building %s from scratch\n", tag)
	res, err := d.ImageBuild(ctx, &buf, client.ImageBuildOptions{
		Tags:        []string{tag},
		Remove:      true,
		ForceRemove: true,
		Labels:      map[string]string{"dev.contested.image": "toxiproxy", "dev.contested.toxiproxy.version": version},
	})
	if err != nil {
		return fmt.Errorf("docker build: %w", err)
	}
	defer res.Body.Close()
	return drainJSON(res.Body, log, "images:   ")
}
