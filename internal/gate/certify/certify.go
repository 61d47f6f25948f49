// Package certify keeps the certificates that let validate reuse a result:
// a certificate says that a battery package passed, or that a surface was
// GREEN, in a GREEN, gate-certified validate run whose inputs had a given
// digest (internal/digest) and whose tests touched given inputs (package
// touched). A later run reuses the result only when both are as they were.
//
// A certificate counts only when someone this checkout trusts vouches for
// it (see Trust):
//
//   - a developer's own certificates are sealed with an HMAC keyed by a
//     secret only that user can read (OwnKey), and count only for that
//     user;
//   - the team's certificates are signed with an ed25519 key whose public
//     half the registry lists under [reuse] trust, so that trusting a key
//     is a reviewed commit. CI signs with CONTESTED_SIGNING_KEY.
//
// A store is untrusted input: whoever can write the results directory or
// the team's table can put anything there. Every certificate is read with
// a size bound, checked for form (its run id, commit and branch can reach
// a terminal), and verified; one that does not verify is ignored with a
// line that says why, and what it certified runs.
package certify

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"
	"unicode"

	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/runid"
	"github.com/contested/contested/internal/touched"
)

// Schema is the "schema" of a certificate.
const Schema = "contested/certificate@2"

// firstSchema is the schema of certificates an earlier contested wrote,
// sealed with a key anyone could compute: never trusted.
const firstSchema = "contested/certificate@1"

// The kinds of certificate.
const (
	// KindPackage certifies that a battery package passed.
	KindPackage = "package"
	// KindSurface certifies that a registered surface was GREEN.
	KindSurface = "surface"
)

// ErrSeal means a certificate does not verify.
var ErrSeal = errors.New("the certificate does not verify")

// Certificate is one reusable result.
type Certificate struct {
	Schema string `json:"schema"`
	// Module is the module path the certificate was written for.
	Module string `json:"module"`
	Kind   string `json:"kind"`
	// Key is the package's import path or the surface's id.
	Key string `json:"key"`
	// Digest is the digest of the inputs the result was built from: the
	// package's test binary, the registry, the run's settings.
	Digest string `json:"digest"`
	// Touched is what a package's tests touched when they ran, and Inputs
	// the digest of those inputs then (touched.Inputs). A package is
	// reused only while Inputs is what they digest to now.
	Touched *touched.Record `json:"touched,omitempty"`
	Inputs  string          `json:"inputs,omitempty"`
	// Packages are a surface's packages with their Inputs in the run that
	// certified it: the surface is reused only with exactly those.
	Packages map[string]string `json:"packages,omitempty"`
	// RunID, Commit, Dirty, Branch and At say which run reached it: its
	// id, the commit it ran, whether that had uncommitted changes, the
	// branch, and when.
	RunID  string    `json:"run_id"`
	Commit string    `json:"commit,omitempty"`
	Dirty  bool      `json:"dirty,omitempty"`
	Branch string    `json:"branch,omitempty"`
	At     time.Time `json:"at"`
	// Verdict is PASS for a package, GREEN for a surface.
	Verdict string `json:"verdict"`
	// Armed and Fired are the faults the result stands on, in that run.
	Armed int `json:"armed"`
	Fired int `json:"fired"`
	// Tests is how many tests of the package ran to an end.
	Tests int `json:"tests,omitempty"`
	// Class is the surface's recording class.
	Class string `json:"class,omitempty"`
	// Surface is the surface's verdict, leg by leg, as that run gave it.
	Surface *gate.SurfaceVerdict `json:"surface,omitempty"`
	// Signer ("ed25519:…") and Signature are a team certificate's; Seal is
	// a user's own certificate's HMAC. Exactly one of the two is set.
	Signer    string `json:"signer,omitempty"`
	Signature string `json:"signature,omitempty"`
	Seal      string `json:"seal,omitempty"`
}

// Certifiable reports whether a verdict may be certified: only a passing
// package and a GREEN surface. RED, INCONCLUSIVE, PARTIAL, CANNOT RUN and
// a refused gate never are.
func Certifiable(kind, verdict string) bool {
	return kind == KindPackage && verdict == "PASS" || kind == KindSurface && verdict == "GREEN"
}

// content is what a seal or a signature covers: the certificate without
// them (its signer included, so a signature is never moved to another).
func (c Certificate) content() ([]byte, error) {
	c.Seal, c.Signature = "", ""
	return json.Marshal(c)
}

var (
	hex64  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	commit = regexp.MustCompile(`^[0-9a-f]{0,64}$`)
	// keyForm is an import path or a surface id: printable, no space.
	keyForm = regexp.MustCompile(`^[A-Za-z0-9._~/+@-]{1,300}$`)
)

// wellFormed checks every field a writer shows: a store can hold anything,
// and a run id, a commit or a branch reaches terminals, summaries and
// reports.
func (c Certificate) wellFormed() error {
	if err := runid.Check(c.RunID); err != nil {
		return fmt.Errorf("its run id is not one: %v", err)
	}
	switch {
	case c.Kind != KindPackage && c.Kind != KindSurface:
		return fmt.Errorf("its kind %q is neither %s nor %s", c.Kind, KindPackage, KindSurface)
	case !keyForm.MatchString(c.Key):
		return fmt.Errorf("its key %q is no import path or surface id", c.Key)
	case !hex64.MatchString(c.Digest):
		return fmt.Errorf("its digest %q is not a SHA-256", c.Digest)
	case !commit.MatchString(c.Commit):
		return fmt.Errorf("its commit %q is not a commit id", c.Commit)
	case len(c.Branch) > 200 || slices.ContainsFunc([]rune(c.Branch), func(r rune) bool { return !unicode.IsPrint(r) || r == ' ' }):
		return fmt.Errorf("its branch %q is not a branch name", c.Branch)
	case c.Kind == KindPackage && c.Touched == nil:
		return errors.New("it has no record of what the package's tests touched, so nothing says its inputs are the same")
	case c.Kind == KindPackage && !hex64.MatchString(c.Inputs):
		return fmt.Errorf("its inputs' digest %q is not a SHA-256", c.Inputs)
	case c.Armed < 0 || c.Fired < 0 || c.Fired > c.Armed:
		return fmt.Errorf("it says %d faults armed and %d fired", c.Armed, c.Fired)
	}
	return nil
}

// Keep is how many certificates of one kind and key a store holds for each
// branch, one per digest and inputs, the newest kept: enough for a
// reverted change, or a switch between a few branches, to find the result
// its inputs already earned. A branch's certificates never evict
// another's.
const Keep = 8

// Set is the certificates a store holds for a module, by kind and key, and
// one line for each it ignored.
type Set struct {
	byKey   map[string][]Certificate // newest first
	Ignored []string
}

func key(kind, k string) string { return kind + "\x00" + k }

// Candidates are the certificates of kind for key whose build-time inputs
// had digest, newest first: the one to reuse is the first whose run-time
// inputs are still what they were.
func (s *Set) Candidates(kind, k, digest string) []Certificate {
	if s == nil {
		return nil
	}
	var out []Certificate
	for _, c := range s.byKey[key(kind, k)] {
		if c.Digest == digest {
			out = append(out, c)
		}
	}
	return out
}

// Latest returns the newest valid certificate of kind for key, whatever
// its digest: the one a changed result is told apart from.
func (s *Set) Latest(kind, k string) (Certificate, bool) {
	if s == nil || len(s.byKey[key(kind, k)]) == 0 {
		return Certificate{}, false
	}
	return s.byKey[key(kind, k)][0], true
}

// Len is how many valid certificates the set holds.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	n := 0
	for _, cs := range s.byKey {
		n += len(cs)
	}
	return n
}

// Merge adds o's certificates and ignored lines to s.
func (s *Set) Merge(o *Set) {
	if o == nil {
		return
	}
	for _, cs := range o.byKey {
		for _, c := range cs {
			s.add(c)
		}
	}
	s.Ignored = append(s.Ignored, o.Ignored...)
}

// same says whether two certificates certify the same inputs.
func same(a, b Certificate) bool {
	return a.Kind == b.Kind && a.Key == b.Key && a.Digest == b.Digest && a.Inputs == b.Inputs && slicesEqualMap(a.Packages, b.Packages)
}

func slicesEqualMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// add holds c, newest first; of two for the same inputs the newer stays.
func (s *Set) add(c Certificate) {
	if s.byKey == nil {
		s.byKey = map[string][]Certificate{}
	}
	k := key(c.Kind, c.Key)
	cs := s.byKey[k]
	if i := slices.IndexFunc(cs, func(o Certificate) bool { return same(o, c) && o.Signer == c.Signer }); i >= 0 {
		if !c.At.After(cs[i].At) {
			return
		}
		cs = slices.Delete(cs, i, i+1)
	}
	i, _ := slices.BinarySearchFunc(cs, c, func(o, c Certificate) int { return c.At.Compare(o.At) })
	s.byKey[k] = slices.Insert(cs, i, c)
}

// expired are the certificates of held (one kind and key, newest first)
// beyond the newest Keep of their branch.
func expired(held []Certificate) []Certificate {
	n := map[string]int{}
	var out []Certificate
	for _, c := range held {
		n[c.Branch]++
		if n[c.Branch] > Keep {
			out = append(out, c)
		}
	}
	return out
}
