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
	"strconv"
	"strings"

	"github.com/moby/moby/client"
)

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
	fmt.Fprintf(log, "images: building %s from scratch\n", tag)
	return FromBinary(ctx, d, tag, filepath.Join(dir, "toxiproxy-server"), []string{"-host=0.0.0.0"},
		map[string]string{"dev.contested.image": "toxiproxy", "dev.contested.toxiproxy.version": version}, log)
}

// FromBinary builds an image FROM scratch holding one static binary as
// its entrypoint (/<base name>), with default arguments cmd and labels.
func FromBinary(ctx context.Context, d Docker, tag, binPath string, cmd []string, labels map[string]string, log io.Writer) error {
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return err
	}
	name := filepath.Base(binPath)
	quoted := make([]string, len(cmd))
	for i, c := range cmd {
		quoted[i] = strconv.Quote(c)
	}
	dockerfile := fmt.Sprintf("FROM scratch\nCOPY %s /%s\nENTRYPOINT [%q]\nCMD [%s]\n", name, name, "/"+name, strings.Join(quoted, ", "))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte(dockerfile)},
		{name, 0o755, bin},
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
	res, err := d.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true, Labels: labels})
	if err != nil {
		return fmt.Errorf("docker build %s: %w", tag, err)
	}
	defer res.Body.Close()
	return drainJSON(res.Body, log, "images:   ")
}
