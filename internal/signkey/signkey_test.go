package signkey_test

import (
	"crypto/ed25519"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/signkey"
)

// TestCertkeyWritesAPairItNeverReplaces: the private key is mode 0600 and
// loads; the public line parses; a second pair in the same place is
// refused; a key file others can read, or one of another form, is refused.
func TestCertkeyWritesAPairItNeverReplaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	line, err := signkey.Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	priv := filepath.Join(dir, signkey.PrivateFile)
	if fi, err := os.Stat(priv); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("private key file %v, %v; want mode 0600", fi, err)
	}
	k, err := signkey.Load(priv)
	if err != nil {
		t.Fatal(err)
	}
	if got := signkey.Line(k.Public().(ed25519.PublicKey)); got != line {
		t.Errorf("the private key's public half is %s, the line printed %s", got, line)
	}
	if pub, _ := os.ReadFile(filepath.Join(dir, signkey.PublicFile)); strings.TrimSpace(string(pub)) != line {
		t.Errorf("the public key file holds %q, want %q", pub, line)
	}
	if _, err := signkey.Parse(line); err != nil {
		t.Error(err)
	}
	if _, err := signkey.Generate(dir); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a second pair in the same directory: %v; want it refused", err)
	}
	if again, _ := signkey.Load(priv); !again.Equal(k) {
		t.Error("the key was replaced")
	}
	os.Chmod(priv, 0o644)
	if _, err := signkey.Load(priv); !errors.Is(err, signkey.ErrKey) {
		t.Errorf("a key others can read: %v; want ErrKey", err)
	}
	junk := filepath.Join(t.TempDir(), "junk.key")
	os.WriteFile(junk, []byte("-----BEGIN PRIVATE KEY-----\n"), 0o600)
	if _, err := signkey.Load(junk); !errors.Is(err, signkey.ErrKey) {
		t.Errorf("a file of another form: %v; want ErrKey", err)
	}
	for _, bad := range []string{"ssh-ed25519 AAAA", "ed25519:short", ""} {
		if _, err := signkey.Parse(bad); !errors.Is(err, signkey.ErrKey) {
			t.Errorf("ParsePublic(%q): %v; want ErrKey", bad, err)
		}
	}
}
