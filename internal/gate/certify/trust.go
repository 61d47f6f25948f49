package certify

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/contested/contested/internal/private"
	"github.com/contested/contested/internal/signkey"
)

// Trust is whom a checkout believes: its user, through the secret only
// that user can read, and the keys the registry's [reuse] trust lists. A
// run that holds a signing key signs what it certifies instead of sealing
// it.
type Trust struct {
	own      []byte
	ownWhy   string
	trusted  map[string]ed25519.PublicKey
	signer   ed25519.PrivateKey
	signerID string
}

// NewTrust is the trust of a checkout: own is the user's secret (nil when
// none could be had, with why saying so), trusted the public keys of
// [reuse] trust ("ed25519:…"), signer the key this run signs with (nil
// for none).
func NewTrust(own []byte, why string, trusted []string, signer ed25519.PrivateKey) (*Trust, error) {
	t := &Trust{own: own, ownWhy: why, trusted: map[string]ed25519.PublicKey{}}
	for _, line := range trusted {
		k, err := signkey.Parse(line)
		if err != nil {
			return nil, err
		}
		t.trusted[signkey.Line(k)] = k
	}
	if signer != nil {
		t.signer = signer
		t.signerID = signkey.Line(signer.Public().(ed25519.PublicKey))
	}
	return t, nil
}

// Signs reports whether this run signs its certificates (a key the team
// can trust) rather than sealing them for its user alone.
func (t *Trust) Signs() bool { return t.signer != nil }

// Signer is the public key line of the key this run signs with.
func (t *Trust) Signer() string { return t.signerID }

// TrustsSigner reports whether the registry trusts this run's signing key:
// a certificate it signs that no checkout trusts is reused by no one.
func (t *Trust) TrustsSigner() bool { _, ok := t.trusted[t.signerID]; return ok }

// CanSeal reports whether this run can vouch for a certificate at all,
// and why not.
func (t *Trust) CanSeal() (bool, string) {
	if t.signer != nil || t.own != nil {
		return true, ""
	}
	return false, t.ownWhy
}

// Vouch signs c with the run's signing key, or seals it with its user's
// secret, with the schema set.
func (t *Trust) Vouch(c Certificate) (Certificate, error) {
	c.Schema, c.Seal, c.Signature, c.Signer = Schema, "", "", ""
	if t.signer != nil {
		c.Signer = t.signerID
	} else if t.own == nil {
		return c, fmt.Errorf("vouch for a certificate: %s", t.ownWhy)
	}
	b, err := c.content()
	if err != nil {
		return c, fmt.Errorf("vouch for a certificate: %w", err)
	}
	if t.signer != nil {
		c.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(t.signer, b))
	} else {
		c.Seal = t.seal(b)
	}
	return c, nil
}

func (t *Trust) seal(b []byte) string {
	m := hmac.New(sha256.New, t.own)
	m.Write([]byte(Schema + "\x00"))
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}

// Open parses a stored certificate and checks it: its schema, its module,
// its form, that someone this checkout trusts vouches for it, and that
// its verdict is one that may be certified.
func (t *Trust) Open(data []byte, module string) (Certificate, error) {
	var c Certificate
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("%w: it does not parse (%v)", ErrSeal, err)
	}
	switch {
	case c.Schema == firstSchema:
		return c, fmt.Errorf("%w: an earlier contested wrote it, sealed with a key anyone could compute", ErrSeal)
	case c.Schema != Schema:
		return c, fmt.Errorf("%w: schema %q, want %q", ErrSeal, c.Schema, Schema)
	case c.Module != module:
		return c, fmt.Errorf("%w: it was written for module %q, not %q", ErrSeal, c.Module, module)
	}
	if err := c.wellFormed(); err != nil {
		return c, fmt.Errorf("%w: %v", ErrSeal, err)
	}
	b, err := c.content()
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrSeal, err)
	}
	switch {
	case c.Signature != "" || c.Signer != "":
		k, ok := t.trusted[c.Signer]
		if !ok {
			return c, fmt.Errorf("%w: it is signed by %.20s…, a key [reuse] trust does not list", ErrSeal, c.Signer)
		}
		sig, err := base64.StdEncoding.DecodeString(c.Signature)
		if err != nil || !ed25519.Verify(k, b, sig) {
			return c, fmt.Errorf("%w: its signature does not match its content (edited, or forged)", ErrSeal)
		}
	case c.Seal != "":
		if t.own == nil {
			return c, fmt.Errorf("%w: it is sealed for one user, and this run has no secret of its user's to check it (%s)", ErrSeal, t.ownWhy)
		}
		if !hmac.Equal([]byte(t.seal(b)), []byte(c.Seal)) {
			return c, fmt.Errorf("%w: its seal is not this user's (another user's certificate, or edited)", ErrSeal)
		}
	default:
		return c, fmt.Errorf("%w: nobody signed or sealed it", ErrSeal)
	}
	if !Certifiable(c.Kind, c.Verdict) {
		return c, fmt.Errorf("%w: a %s %s is never a certificate", ErrSeal, c.Kind, c.Verdict)
	}
	return c, nil
}

// ownKeyFile is the user's secret, under the user's config directory.
const ownKeyFile = "contested/seal.key"

// OwnKey is the user's secret that seals their own certificates: read
// from the user's config directory (os.UserConfigDir), made there on
// first use, in a directory and a file only this user can enter and read.
// Another user's certificates do not verify with it, so they never count
// for this user. An error says why there is none and what to do.
func OwnKey() ([]byte, error) {
	cfg, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("no secret to seal certificates with: %v; set HOME or XDG_CONFIG_HOME", err)
	}
	return ownKeyIn(filepath.Join(cfg, filepath.FromSlash(ownKeyFile)))
}

func ownKeyIn(path string) ([]byte, error) {
	if err := private.MkdirAll(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("no secret to seal certificates with: %v", err)
	}
	b, err := private.ReadFile(path, 0o077, 4096)
	if errors.Is(err, fs.ErrNotExist) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("no secret to seal certificates with: %w", err)
		}
		if err := signkey.WriteNew(path, hex.EncodeToString(key)+"\n", 0o600); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("no secret to seal certificates with: %w", err)
		}
		b, err = private.ReadFile(path, 0o077, 4096) // the one written first, if two raced
	}
	if err != nil {
		return nil, fmt.Errorf("no secret to seal certificates with: %v (remove %s to make a new one; your certificates so far then run again)", err, path)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("no secret to seal certificates with: %s does not hold 32 bytes in hex (remove it to make a new one)", path)
	}
	return key, nil
}
