// Package signkey makes and reads the ed25519 keys that sign the reuse
// certificates a team shares: a private key in a file only its owner can
// read, and its public half as the one line a registry's [reuse] trust
// lists.
package signkey

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/contested/contested/internal/files"
	"github.com/contested/contested/internal/private"
)

// publicPrefix starts a public key line; privatePrefix a private key
// file's one line.
const (
	publicPrefix  = "ed25519:"
	privatePrefix = "ed25519-private:"
)

// ErrKey means a key, or its file, is not one this tool can use.
var ErrKey = errors.New("not a signing key")

// Line is a public key as [reuse] trust lists it: "ed25519:" and the key
// in standard base64.
func Line(k ed25519.PublicKey) string {
	return publicPrefix + base64.StdEncoding.EncodeToString(k)
}

// Parse reads a public key line ("ed25519:…").
func Parse(line string) (ed25519.PublicKey, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(line), publicPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: %q does not start with %q; give the line go tool mage certkey printed", ErrKey, short(line), publicPrefix)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: %q is not an ed25519 public key (%d bytes in standard base64); give the line go tool mage certkey printed", ErrKey, short(line), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

func short(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// The files Generate writes in its directory.
const (
	PrivateFile = "contested-signing.key"
	PublicFile  = "contested-signing.pub"
)

// Generate writes a new key pair in dir (made, mode 0700, if missing):
// the private key, mode 0600, and the public key line, mode 0644. It
// never replaces a key already there. It returns the public key line.
func Generate(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("make %s: %w", dir, err)
	}
	privPath, pubPath := filepath.Join(dir, PrivateFile), filepath.Join(dir, PublicFile)
	for _, p := range []string{privPath, pubPath} {
		if _, err := os.Lstat(p); err == nil {
			return "", fmt.Errorf("%w: %s is already there, and a key is never replaced; move it away, or give another directory", fs.ErrExist, p)
		}
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("generate a key: %w", err)
	}
	if err := WriteNew(privPath, privatePrefix+base64.StdEncoding.EncodeToString(priv.Seed())+"\n", 0o600); err != nil {
		return "", err
	}
	line := Line(pub)
	if err := WriteNew(pubPath, line+"\n", 0o644); err != nil {
		os.Remove(privPath)
		return "", err
	}
	return line, nil
}

// WriteNew creates path with body and mode, failing (fs.ErrExist) if
// anything is there.
func WriteNew(path, body string, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.WriteString(body); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Chmod(path, mode) // whatever the umask left
}

// Load reads the private key file at path (CONTESTED_SIGNING_KEY): this
// user's own regular file that no one else can read, holding the line
// Generate wrote.
func Load(path string) (ed25519.PrivateKey, error) {
	f, fi, err := files.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v; give the path of the file go tool mage certkey wrote", ErrKey, path, err)
	}
	defer f.Close()
	if err := private.CheckFile(path, fi, 0o077); err != nil {
		return nil, fmt.Errorf("%w: %v (chmod 600 %s)", ErrKey, err, path)
	}
	b, err := files.ReadOpen(f, fi, 4096)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKey, path, err)
	}
	b64, ok := strings.CutPrefix(strings.TrimSpace(string(b)), privatePrefix)
	seed, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%w: %s does not hold the one line go tool mage certkey writes (%q and a %d-byte seed in base64)", ErrKey, path, privatePrefix, ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}
