package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
)

// ErrServiceName: a service image's name is not one the rig can tag.
var ErrServiceName = errors.New("bad service image name")

// validService is a service image's name: lower-case letters and digits,
// starting with a letter.
var validService = regexp.MustCompile(`^[a-z][a-z0-9]{0,31}$`)

// ServiceTag is the tag of a service's rig image, a tag of the rig's own.
func ServiceTag(name string) string { return "contested.local/" + name + ":rig" }

// CheckServiceName refuses a name ServiceTag cannot tag.
func CheckServiceName(name string) error {
	if !validService.MatchString(name) {
		return fmt.Errorf("%w: %q must be lower-case letters and digits, starting with a letter", ErrServiceName, name)
	}
	return nil
}

// BuildService builds a service's rig image from the module at dir: the
// Go package pkg compiled static (CGO_ENABLED=0) and put on scratch as
// /<name>, tagged ServiceTag(name).
func BuildService(ctx context.Context, d Docker, dir, name, pkg string, out io.Writer) (string, error) {
	if err := CheckServiceName(name); err != nil {
		return "", err
	}
	tag := ServiceTag(name)
	tmp, err := os.MkdirTemp("", "contested-rig-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	if err := FromBinary(ctx, d, tag, bin, []string{"help"}, map[string]string{"dev.contested.image": name + "-rig"}, io.Discard); err != nil {
		return "", err
	}
	fmt.Fprintf(out, "cluster: built %s (static, on scratch)\n", tag)
	return tag, nil
}
