package command

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/signkey"
	"github.com/contested/contested/internal/terminal"
)

// CertkeyOptions configures Certkey.
type CertkeyOptions struct {
	// Dir is where the key pair goes; never inside the module, where the
	// private key could be committed.
	Dir string
	// Module is the module the command runs in; empty means the working
	// directory.
	Module string
	Out    io.Writer `json:"-"`
}

// Certkey makes the ed25519 key pair that signs the certificates a team
// shares: the private key (mode 0600) and the public line in Dir, the
// public line printed with where it goes. It never replaces a key, and
// refuses a directory inside the module.
func Certkey(opts CertkeyOptions) error {
	if strings.TrimSpace(opts.Dir) == "" {
		return fmt.Errorf("%w: certkey needs a directory for the key pair, outside the repository: go tool mage certkey ~/contested-ci-key", ErrUsage)
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if root, err := runenv.ModuleDir(opts.Module); err == nil {
		if rel, err := filepath.Rel(root, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%w: %s is inside the module %s, where the private key could be committed; give a directory outside it", ErrUsage, dir, root)
		}
	}
	line, err := signkey.Generate(dir)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if err != nil {
		return err
	}
	priv := filepath.Join(dir, signkey.PrivateFile)
	fmt.Fprintf(opts.Out, "certkey: wrote %s (the private key, mode 0600: keep it as secret as the right to push to main)\n", terminal.Escape(priv))
	fmt.Fprintf(opts.Out, "certkey: wrote %s (the public key)\n\n", terminal.Escape(filepath.Join(dir, signkey.PublicFile)))
	fmt.Fprintf(opts.Out, "Trust it in contested-surfaces.toml, in a reviewed commit:\n\n  [reuse]\n  trust = [%q]\n\n", line)
	fmt.Fprintf(opts.Out, "and let CI sign with it: %s=%s (docs/how-to/ci.md#sharing-what-ci-certified)\n", envvar.SigningKey, terminal.Escape(priv))
	return nil
}
