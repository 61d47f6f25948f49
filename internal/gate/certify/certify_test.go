package certify_test

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/signkey"
	"github.com/contested/contested/internal/touched"
)

const module = "example.com/m"

// digestOf is a digest of the right form, named by s.
func digestOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// ownTrust is a user's trust: a secret of their own, no trusted key.
func ownTrust(t *testing.T) *certify.Trust {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	tr, err := certify.NewTrust(key, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// teamKey is a signing key and its public line.
func teamKey(t *testing.T) (ed25519.PrivateKey, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv, signkey.Line(pub)
}

// raw is a certificate not yet vouched for.
func raw(kind, key, verdict string) certify.Certificate {
	c := certify.Certificate{Module: module, Kind: kind, Key: key, Digest: digestOf("d-" + key), RunID: "run-1",
		Commit: "abc123", At: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Verdict: verdict, Armed: 2, Fired: 2}
	if kind == certify.KindPackage {
		c.Touched, c.Inputs = &touched.Record{Open: []string{"fixture.json"}}, digestOf("inputs")
	}
	return c
}

func vouch(t *testing.T, tr *certify.Trust, c certify.Certificate) certify.Certificate {
	t.Helper()
	c, err := tr.Vouch(c)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func cert(t *testing.T, tr *certify.Trust, kind, key, verdict string) certify.Certificate {
	t.Helper()
	return vouch(t, tr, raw(kind, key, verdict))
}

// stored is a file store in a new results directory, certs written to it.
func stored(t *testing.T, tr *certify.Trust, certs ...certify.Certificate) (s *certify.File, root string) {
	t.Helper()
	root = t.TempDir()
	s = certify.NewFile(root, tr)
	if err := s.Write(context.Background(), certs); err != nil {
		t.Fatal(err)
	}
	return s, root
}

func read(t *testing.T, s certify.Store) *certify.Set {
	t.Helper()
	set, err := s.Read(context.Background(), module, nil)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func has(set *certify.Set, kind, key, digest string) (certify.Certificate, bool) {
	cs := set.Candidates(kind, key, digest)
	if len(cs) == 0 {
		return certify.Certificate{}, false
	}
	return cs[0], true
}

func TestACertificateReadsBackAsWritten(t *testing.T) {
	tr := ownTrust(t)
	s, _ := stored(t, tr, cert(t, tr, certify.KindPackage, "example.com/m/a", "PASS"), cert(t, tr, certify.KindSurface, "m.store", "GREEN"))
	set := read(t, s)
	if set.Len() != 2 || len(set.Ignored) != 0 {
		t.Fatalf("read %d certificates, ignored %v; want 2, none", set.Len(), set.Ignored)
	}
	if c, ok := has(set, certify.KindSurface, "m.store", digestOf("d-m.store")); !ok || c.RunID != "run-1" || c.Fired != 2 {
		t.Errorf("surface certificate %+v, %v", c, ok)
	}
	if c, ok := has(set, certify.KindPackage, "example.com/m/a", digestOf("d-example.com/m/a")); !ok || c.Touched == nil || c.Touched.Open[0] != "fixture.json" {
		t.Errorf("package certificate %+v, %v; want its record of what it touched", c, ok)
	}
}

// oldSeal is how an earlier contested sealed a certificate: an HMAC keyed
// by the module path, which anyone can compute.
func oldSeal(c certify.Certificate) []byte {
	c.Schema, c.Seal, c.Signature, c.Signer = "contested/certificate@1", "", "", ""
	b, _ := json.Marshal(c)
	key := sha256.Sum256([]byte("contested/certificate@1\x00" + c.Module))
	m := hmac.New(sha256.New, key[:])
	m.Write(b)
	c.Seal = hex.EncodeToString(m.Sum(nil))
	b, _ = json.Marshal(c)
	return b
}

// TestACertificateThatDoesNotVerifyIsIgnoredSayingWhy: each way a stored
// certificate can be wrong, forged or another person's is ignored with one
// line naming the file and why, and the certificates beside it are still
// read.
func TestACertificateThatDoesNotVerifyIsIgnoredSayingWhy(t *testing.T) {
	teamPriv, teamPub := teamKey(t)
	me, err := certify.NewTrust([]byte(strings.Repeat("m", 32)), "", []string{teamPub}, nil)
	if err != nil {
		t.Fatal(err)
	}
	team, err := certify.NewTrust(nil, "no secret here", []string{teamPub}, teamPriv)
	if err != nil {
		t.Fatal(err)
	}
	strangerPriv, _ := teamKey(t)
	stranger, _ := certify.NewTrust(nil, "", nil, strangerPriv)
	tests := []struct {
		name string
		// spoil replaces the surface certificate's file at p with bytes.
		spoil func(t *testing.T, p string, good certify.Certificate) []byte
		says  string
	}{
		{"edited", func(t *testing.T, p string, good certify.Certificate) []byte {
			good.Fired = 1
			b, _ := json.Marshal(good)
			return b
		}, "seal is not this user's"},
		{"truncated", func(t *testing.T, p string, good certify.Certificate) []byte {
			b, _ := json.Marshal(good)
			return b[:len(b)/2]
		}, "does not parse"},
		{"another user's", func(t *testing.T, p string, good certify.Certificate) []byte {
			b, _ := json.Marshal(cert(t, ownTrust(t), certify.KindSurface, "m.store", "GREEN"))
			return b
		}, "seal is not this user's"},
		{"resealed the way an earlier contested sealed, with the module path", func(t *testing.T, p string, good certify.Certificate) []byte {
			return oldSeal(good)
		}, "an earlier contested wrote it"},
		{"neither signed nor sealed", func(t *testing.T, p string, good certify.Certificate) []byte {
			good.Seal = ""
			b, _ := json.Marshal(good)
			return b
		}, "nobody signed or sealed it"},
		{"signed by a key the registry does not trust", func(t *testing.T, p string, good certify.Certificate) []byte {
			b, _ := json.Marshal(vouch(t, stranger, raw(certify.KindSurface, "m.store", "GREEN")))
			return b
		}, "a key [reuse] trust does not list"},
		{"signed by a stranger who names the trusted key", func(t *testing.T, p string, good certify.Certificate) []byte {
			c := vouch(t, stranger, raw(certify.KindSurface, "m.store", "GREEN"))
			c.Signer = teamPub
			b, _ := json.Marshal(c)
			return b
		}, "signature does not match"},
		{"signed by the team, then edited", func(t *testing.T, p string, good certify.Certificate) []byte {
			c := vouch(t, team, raw(certify.KindSurface, "m.store", "GREEN"))
			c.Armed, c.Fired = 9, 9
			b, _ := json.Marshal(c)
			return b
		}, "signature does not match"},
		{"from another module", func(t *testing.T, p string, good certify.Certificate) []byte {
			c := raw(certify.KindSurface, "m.store", "GREEN")
			c.Module = "example.com/other"
			b, _ := json.Marshal(vouch(t, me, c))
			return b
		}, `written for module "example.com/other"`},
		{"a RED verdict sealed", func(t *testing.T, p string, good certify.Certificate) []byte {
			b, _ := json.Marshal(cert(t, me, certify.KindSurface, "m.store", "RED"))
			return b
		}, "a surface RED is never a certificate"},
		{"a run id that is a workflow command", func(t *testing.T, p string, good certify.Certificate) []byte {
			c := raw(certify.KindSurface, "m.store", "GREEN")
			c.RunID = "run-1\n::error title=x::owned"
			b, _ := json.Marshal(vouch(t, me, c))
			return b
		}, "run id is not one"},
		{"a commit that is a terminal escape", func(t *testing.T, p string, good certify.Certificate) []byte {
			c := raw(certify.KindSurface, "m.store", "GREEN")
			c.Commit = "\x1b]0;owned\x07"
			b, _ := json.Marshal(vouch(t, me, c))
			return b
		}, "commit"},
		{"a package with no record of what its tests touched", func(t *testing.T, p string, good certify.Certificate) []byte {
			c := raw(certify.KindPackage, "example.com/m/b", "PASS")
			c.Touched = nil
			b, _ := json.Marshal(vouch(t, me, c))
			return b
		}, "no record of what the package's tests touched"},
		{"another key's certificate", func(t *testing.T, p string, good certify.Certificate) []byte {
			b, _ := json.Marshal(cert(t, me, certify.KindSurface, "m.other", "GREEN"))
			return b
		}, "whose file is another"},
		{"a FIFO", func(t *testing.T, p string, good certify.Certificate) []byte {
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip("no FIFO here:", err)
			}
			return nil
		}, "not a regular file"},
		{"a link", func(t *testing.T, p string, good certify.Certificate) []byte {
			other := filepath.Join(t.TempDir(), "elsewhere.json")
			b, _ := json.Marshal(good)
			os.WriteFile(other, b, 0o644)
			os.Remove(p)
			if err := os.Symlink(other, p); err != nil {
				t.Fatal(err)
			}
			return nil
		}, "link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good := cert(t, me, certify.KindSurface, "m.store", "GREEN")
			s, root := stored(t, me, good, cert(t, me, certify.KindPackage, "example.com/m/a", "PASS"))
			p := only(t, root, "surface-")
			if b := tt.spoil(t, p, good); b != nil {
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan *certify.Set)
			go func() { done <- read(t, s) }()
			var set *certify.Set
			select {
			case set = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Read waited on the spoiled certificate")
			}
			if _, ok := has(set, certify.KindSurface, "m.store", good.Digest); ok {
				t.Error("the spoiled certificate was trusted")
			}
			if _, ok := has(set, certify.KindPackage, "example.com/m/a", digestOf("d-example.com/m/a")); !ok {
				t.Error("the good certificate beside it was not read")
			}
			if len(set.Ignored) != 1 || !strings.Contains(set.Ignored[0], filepath.Base(p)) || !strings.Contains(set.Ignored[0], tt.says) {
				t.Errorf("ignored %q; want one line naming %s and saying %q", set.Ignored, filepath.Base(p), tt.says)
			}
		})
	}
}

// TestATeamCertificateCountsForEveryoneWhoTrustsItsKey: what CI signs with
// a key the registry lists verifies for any user, and only for a checkout
// that lists it.
func TestATeamCertificateCountsForEveryoneWhoTrustsItsKey(t *testing.T) {
	priv, pub := teamKey(t)
	ci, err := certify.NewTrust(nil, "CI has no home", []string{pub}, priv)
	if err != nil {
		t.Fatal(err)
	}
	c := cert(t, ci, certify.KindSurface, "m.store", "GREEN")
	if c.Seal != "" || c.Signer != pub || c.Signature == "" {
		t.Fatalf("CI's certificate %+v; want signed by its key, not sealed", c)
	}
	b, _ := json.Marshal(c)
	alice, _ := certify.NewTrust([]byte(strings.Repeat("a", 32)), "", []string{pub}, nil)
	if _, err := alice.Open(b, module); err != nil {
		t.Errorf("a teammate who trusts CI's key: %v", err)
	}
	if _, err := ownTrust(t).Open(b, module); err == nil {
		t.Error("a checkout that does not list CI's key trusted its certificate")
	}
}

// TestARevertFindsTheCertificateItsInputsEarned: certificates of one key
// are held one per digest and inputs, so inputs that come back (a reverted
// change, a branch switched back to) find theirs, and Latest is the newest.
func TestARevertFindsTheCertificateItsInputsEarned(t *testing.T) {
	tr := ownTrust(t)
	s, _ := stored(t, tr)
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, d := range []string{"d-before", "d-changed", "d-before"} {
		c := raw(certify.KindSurface, "m.store", "GREEN")
		c.Digest, c.RunID, c.At = digestOf(d), fmt.Sprintf("run-%d", i+1), at.Add(time.Duration(i)*time.Minute)
		if err := s.Write(ctx, []certify.Certificate{vouch(t, tr, c)}); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if c, ok := has(read(t, s), certify.KindSurface, "m.store", digestOf("d-before")); !ok || c.RunID != "run-1" {
				t.Errorf("after a change, the first inputs' certificate is %+v, %v; want run-1's", c, ok)
			}
		}
	}
	set := read(t, s)
	if set.Len() != 2 || len(set.Ignored) != 0 {
		t.Fatalf("read %d certificates, ignored %v; want 2 (one per digest), none", set.Len(), set.Ignored)
	}
	if c, ok := has(set, certify.KindSurface, "m.store", digestOf("d-before")); !ok || c.RunID != "run-3" {
		t.Errorf("the first inputs' certificate is %+v, %v; want run-3's, the newer of the two", c, ok)
	}
	if c, ok := set.Latest(certify.KindSurface, "m.store"); !ok || c.RunID != "run-3" {
		t.Errorf("Latest is %+v, %v; want run-3's", c, ok)
	}
	if _, ok := has(set, certify.KindSurface, "m.store", digestOf("d-never")); ok {
		t.Error("a digest never certified found a certificate")
	}
}

// TestOneBranchsCertificatesNeverEvictAnothers: past Keep certificates of
// one key on one branch, that branch's oldest go; another branch's newest,
// another key's, and a file that does not verify stay.
func TestOneBranchsCertificatesNeverEvictAnothers(t *testing.T) {
	tr := ownTrust(t)
	mainCert := raw(certify.KindSurface, "m.store", "GREEN")
	mainCert.Branch, mainCert.Digest = "main", digestOf("d-main")
	other := cert(t, tr, certify.KindPackage, "example.com/m/a", "PASS")
	s, root := stored(t, tr, vouch(t, tr, mainCert), other)
	junk := filepath.Join(root, certify.DirName, "surface-junk.json")
	if err := os.WriteFile(junk, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := mainCert.At.Add(time.Hour)
	n := certify.Keep + 3
	for i := range n {
		c := raw(certify.KindSurface, "m.store", "GREEN")
		c.Branch, c.Digest, c.RunID, c.At = "feature", digestOf(fmt.Sprint("d-", i)), fmt.Sprintf("run-%d", i), at.Add(time.Duration(i)*time.Minute)
		if err := s.Write(context.Background(), []certify.Certificate{vouch(t, tr, c)}); err != nil {
			t.Fatal(err)
		}
	}
	set := read(t, s)
	if set.Len() != certify.Keep+2 || len(set.Ignored) != 1 {
		t.Errorf("%d certificates, ignored %q; want the branch's newest %d, main's, the package's, and the junk ignored", set.Len(), set.Ignored, certify.Keep)
	}
	for i := range n {
		_, ok := has(set, certify.KindSurface, "m.store", digestOf(fmt.Sprint("d-", i)))
		if want := i >= n-certify.Keep; ok != want {
			t.Errorf("the branch's certificate %d of %d held: %v, want %v", i+1, n, ok, want)
		}
	}
	if _, ok := has(set, certify.KindSurface, "m.store", mainCert.Digest); !ok {
		t.Error("main's certificate was evicted by a branch's")
	}
	if _, ok := has(set, certify.KindPackage, "example.com/m/a", other.Digest); !ok {
		t.Error("another key's certificate was removed")
	}
	if _, err := os.Stat(junk); err != nil {
		t.Errorf("the file that does not verify was removed: %v", err)
	}
}

// TestAnEarlierContestedsCertificateIsRemovedWhenItsKeyIsWritten: a file
// of the first schema is ignored, saying so, and removed once its key is
// certified again.
func TestAnEarlierContestedsCertificateIsRemovedWhenItsKeyIsWritten(t *testing.T) {
	tr := ownTrust(t)
	s, root := stored(t, tr, cert(t, tr, certify.KindSurface, "m.store", "GREEN"))
	p := only(t, root, "surface-")
	old := strings.TrimSuffix(p, ".json")[:len(p)-len(".json")-8] + ".json"
	if err := os.Rename(p, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, oldSeal(raw(certify.KindSurface, "m.store", "GREEN")), 0o644); err != nil {
		t.Fatal(err)
	}
	if set := read(t, s); set.Len() != 0 || len(set.Ignored) != 1 || !strings.Contains(set.Ignored[0], "earlier contested") {
		t.Fatalf("%d read, ignored %q; want the earlier one ignored, saying so", set.Len(), set.Ignored)
	}
	if err := s.Write(context.Background(), []certify.Certificate{cert(t, tr, certify.KindSurface, "m.store", "GREEN")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the earlier contested's file is still there after its key was written again: %v", err)
	}
	if set := read(t, s); set.Len() != 1 || len(set.Ignored) != 0 {
		t.Errorf("after the write: %d certificates, ignored %q; want the new one alone", set.Len(), set.Ignored)
	}
}

func TestOnlyAPassingPackageAndAGreenSurfaceAreCertifiable(t *testing.T) {
	for _, v := range []string{"RED", "INCONCLUSIVE", "PARTIAL", "CANNOT RUN", "NOT AT THIS LEVEL", "FAIL", ""} {
		if certify.Certifiable(certify.KindSurface, v) || certify.Certifiable(certify.KindPackage, v) {
			t.Errorf("%q is certifiable", v)
		}
	}
	if !certify.Certifiable(certify.KindSurface, "GREEN") || !certify.Certifiable(certify.KindPackage, "PASS") || certify.Certifiable(certify.KindPackage, "GREEN") {
		t.Error("GREEN surfaces and passing packages, and only those, are certifiable")
	}
}

// TestTheSealKeyIsTheUsersOwn: the user's secret is made once, mode 0600,
// and one another user could read is refused, saying what to do.
func TestTheSealKeyIsTheUsersOwn(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	a, err := certify.OwnKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := certify.OwnKey()
	if err != nil || !hmac.Equal(a, b) {
		t.Fatalf("a second read gave another key (%v)", err)
	}
	p := filepath.Join(cfg, "contested", "seal.key")
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v, %v; want mode 0600", fi, err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := certify.OwnKey(); err == nil || !strings.Contains(err.Error(), "remove "+p) {
		t.Errorf("a key others can read: %v; want it refused, saying to remove it", err)
	}
}

func only(t *testing.T, root, prefix string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(root, certify.DirName, prefix+"*.json"))
	if len(m) != 1 {
		t.Fatalf("certificate files %v, want one %s*", m, prefix)
	}
	return m[0]
}
