package certify_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
)

const module = "example.com/m"

func cert(t *testing.T, kind, key, verdict string) certify.Certificate {
	t.Helper()
	c, err := certify.Sealed(certify.Certificate{Module: module, Kind: kind, Key: key, Digest: "d-" + key, RunID: "run-1",
		Commit: "abc", At: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Verdict: verdict, Armed: 2, Fired: 2})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stored is a file store in a new results directory, certs written to it.
func stored(t *testing.T, certs ...certify.Certificate) (s *certify.File, root string) {
	t.Helper()
	root = t.TempDir()
	s = certify.NewFile(root)
	if err := s.Write(context.Background(), certs); err != nil {
		t.Fatal(err)
	}
	return s, root
}

func TestACertificateReadsBackAsWritten(t *testing.T) {
	s, _ := stored(t, cert(t, certify.KindPackage, "example.com/m/a", "PASS"), cert(t, certify.KindSurface, "m.store", "GREEN"))
	ctx := context.Background()
	set, err := s.Read(ctx, module)
	if err != nil || set.Len() != 2 || len(set.Ignored) != 0 {
		t.Fatalf("read %d certificates, ignored %v, %v; want 2, none", set.Len(), set.Ignored, err)
	}
	if c, ok := set.Get(certify.KindSurface, "m.store", "d-m.store"); !ok || c.Digest != "d-m.store" || c.RunID != "run-1" || c.Fired != 2 {
		t.Errorf("surface certificate %+v, %v", c, ok)
	}
}

// TestACertificateThatDoesNotVerifyIsIgnoredSayingWhy: each way a stored
// certificate can be wrong is ignored with one line naming the file and
// why, and the others are still read.
func TestACertificateThatDoesNotVerifyIsIgnoredSayingWhy(t *testing.T) {
	tests := []struct {
		name string
		// spoil replaces the certificate file at p.
		spoil func(t *testing.T, p string, good []byte)
		says  string
	}{
		{"edited", func(t *testing.T, p string, good []byte) {
			os.WriteFile(p, []byte(strings.Replace(string(good), `"fired": 2`, `"fired": 9`, 1)), 0o644)
		}, "seal does not match"},
		{"truncated", func(t *testing.T, p string, good []byte) { os.WriteFile(p, good[:len(good)/2], 0o644) }, "does not parse"},
		{"from another module", func(t *testing.T, p string, good []byte) {
			c := cert(t, certify.KindSurface, "m.store", "GREEN")
			c.Module = "example.com/other"
			c, _ = certify.Sealed(c)
			writeJSON(t, p, c)
		}, `written for module "example.com/other"`},
		{"a RED verdict sealed", func(t *testing.T, p string, good []byte) {
			c := cert(t, certify.KindSurface, "m.store", "RED")
			writeJSON(t, p, c)
		}, "a surface RED is never a certificate"},
		{"another key's certificate", func(t *testing.T, p string, good []byte) {
			writeJSON(t, p, cert(t, certify.KindSurface, "m.other", "GREEN"))
		}, "whose file is another"},
		{"a FIFO", func(t *testing.T, p string, good []byte) {
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip("no FIFO here:", err)
			}
		}, "not a regular file"},
		{"a link", func(t *testing.T, p string, good []byte) {
			other := filepath.Join(t.TempDir(), "elsewhere.json")
			os.WriteFile(other, good, 0o644)
			os.Remove(p)
			if err := os.Symlink(other, p); err != nil {
				t.Fatal(err)
			}
		}, "link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, root := stored(t, cert(t, certify.KindSurface, "m.store", "GREEN"), cert(t, certify.KindPackage, "example.com/m/a", "PASS"))
			ctx := context.Background()
			p := only(t, root, "surface-")
			good, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			tt.spoil(t, p, good)
			done := make(chan struct{})
			var set *certify.Set
			go func() {
				defer close(done)
				set, err = s.Read(ctx, module)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Read waited on the spoiled certificate")
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := set.Get(certify.KindSurface, "m.store", "d-m.store"); ok {
				t.Error("the spoiled certificate was trusted")
			}
			if _, ok := set.Get(certify.KindPackage, "example.com/m/a", "d-example.com/m/a"); !ok {
				t.Error("the good certificate beside it was not read")
			}
			if len(set.Ignored) != 1 || !strings.Contains(set.Ignored[0], filepath.Base(p)) || !strings.Contains(set.Ignored[0], tt.says) || strings.Contains(set.Ignored[0], "\n") {
				t.Errorf("ignored %q; want one line naming %s and saying %q", set.Ignored, filepath.Base(p), tt.says)
			}
		})
	}
}

// TestARevertFindsTheCertificateItsInputsEarned: certificates of one key
// are held one per digest, so inputs that come back (a reverted change, a
// branch switched back to) find theirs, and Latest is the newest.
func TestARevertFindsTheCertificateItsInputsEarned(t *testing.T) {
	s, _ := stored(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, d := range []string{"d-before", "d-changed", "d-before-again"} {
		c := cert(t, certify.KindSurface, "m.store", "GREEN")
		c.Digest, c.RunID, c.At = d, fmt.Sprintf("run-%d", i+1), at.Add(time.Duration(i)*time.Minute)
		if i == 2 {
			c.Digest = "d-before" // the same inputs as the first run, certified again
		}
		c, _ = certify.Sealed(c)
		if err := s.Write(ctx, []certify.Certificate{c}); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			set, err := s.Read(ctx, module)
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := set.Get(certify.KindSurface, "m.store", "d-before"); !ok || c.RunID != "run-1" {
				t.Errorf("after a change, the first inputs' certificate is %+v, %v; want run-1's", c, ok)
			}
		}
	}
	set, err := s.Read(ctx, module)
	if err != nil || set.Len() != 2 || len(set.Ignored) != 0 {
		t.Fatalf("read %d certificates, ignored %v, %v; want 2 (one per digest), none", set.Len(), set.Ignored, err)
	}
	if c, ok := set.Get(certify.KindSurface, "m.store", "d-before"); !ok || c.RunID != "run-3" {
		t.Errorf("the first inputs' certificate is %+v, %v; want run-3's, the newer of the two", c, ok)
	}
	if c, ok := set.Get(certify.KindSurface, "m.store", "d-changed"); !ok || c.RunID != "run-2" {
		t.Errorf("the changed inputs' certificate is %+v, %v; want run-2's", c, ok)
	}
	if c, ok := set.Latest(certify.KindSurface, "m.store"); !ok || c.RunID != "run-3" {
		t.Errorf("Latest is %+v, %v; want run-3's", c, ok)
	}
	if _, ok := set.Get(certify.KindSurface, "m.store", "d-never"); ok {
		t.Error("a digest never certified found a certificate")
	}
}

// TestTheStoreKeepsTheNewestOfEachKey: past Keep certificates of one key
// the oldest are removed; other keys, and a file that does not verify,
// are left alone.
func TestTheStoreKeepsTheNewestOfEachKey(t *testing.T) {
	other := cert(t, certify.KindPackage, "example.com/m/a", "PASS")
	s, root := stored(t, other)
	ctx := context.Background()
	junk := filepath.Join(root, certify.DirName, filepath.Base(only(t, root, "package-")))
	junk = strings.Replace(junk, "package-", "surface-", 1)
	if err := os.WriteFile(junk, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	n := certify.Keep + 3
	for i := range n {
		c := cert(t, certify.KindSurface, "m.store", "GREEN")
		c.Digest, c.RunID, c.At = fmt.Sprintf("d-%d", i), fmt.Sprintf("run-%d", i), at.Add(time.Duration(i)*time.Minute)
		c, _ = certify.Sealed(c)
		if err := s.Write(ctx, []certify.Certificate{c}); err != nil {
			t.Fatal(err)
		}
	}
	set, err := s.Read(ctx, module)
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != certify.Keep+1 || len(set.Ignored) != 1 {
		t.Errorf("%d certificates, ignored %q; want %d of the surface, the package's, and the junk file ignored", set.Len(), set.Ignored, certify.Keep)
	}
	for i := range n {
		_, ok := set.Get(certify.KindSurface, "m.store", fmt.Sprintf("d-%d", i))
		if want := i >= n-certify.Keep; ok != want {
			t.Errorf("certificate %d of %d held: %v, want %v", i+1, n, ok, want)
		}
	}
	if _, ok := set.Get(certify.KindPackage, "example.com/m/a", other.Digest); !ok {
		t.Error("another key's certificate was removed")
	}
	if _, err := os.Stat(junk); err != nil {
		t.Errorf("the file that does not verify was removed: %v", err)
	}
}

// TestACertificateOfTheFirstShapeIsReadThenReplaced: a file named as when
// a store held one certificate per key is read as valid, not reported on
// every run, and removed once its key is certified again.
func TestACertificateOfTheFirstShapeIsReadThenReplaced(t *testing.T) {
	old := cert(t, certify.KindSurface, "m.store", "GREEN")
	s, root := stored(t, old)
	ctx := context.Background()
	h := sha256.Sum256([]byte(old.Key))
	first := filepath.Join(root, certify.DirName, "surface-"+hex.EncodeToString(h[:12])+".json")
	if err := os.Rename(only(t, root, "surface-"), first); err != nil {
		t.Fatal(err)
	}
	set, err := s.Read(ctx, module)
	if err != nil || len(set.Ignored) != 0 {
		t.Fatalf("read: ignored %q, %v; want the first shape's file read as valid", set.Ignored, err)
	}
	if _, ok := set.Get(certify.KindSurface, "m.store", old.Digest); !ok {
		t.Fatal("the first shape's certificate was not found")
	}
	next := old
	next.Digest, next.RunID, next.At = "d-next", "run-2", old.At.Add(time.Minute)
	next, _ = certify.Sealed(next)
	if err := s.Write(ctx, []certify.Certificate{next}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the first shape's file is still there after its key was written again: %v", err)
	}
	if set, _ := s.Read(ctx, module); set.Len() != 1 || len(set.Ignored) != 0 {
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

func writeJSON(t *testing.T, p string, c certify.Certificate) {
	t.Helper()
	_, root := stored(t, c)
	b, err := os.ReadFile(only(t, root, c.Kind+"-"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
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
