// Package certify keeps the certificates that let validate reuse a result:
// a certificate says that a battery package passed, or that a surface was
// GREEN, in a GREEN, gate-certified validate run whose inputs had a given
// digest (internal/digest). A later run whose digest for that package or
// surface is the same can reuse the result instead of running it again.
//
// Certificates live where the flake history lives: files beside the local
// history under the results directory, or a table in the team's history
// database when CONTESTED_HISTORY_DSN is set, so a CI run on main certifies
// what every developer's pre-push can reuse.
//
// Each certificate is sealed: an HMAC over its content, keyed by the
// module's path. A certificate that was edited, truncated, written for
// another module, or that is a link, a FIFO or a device where a file
// should be, does not verify and is ignored, with one line that says why.
// The seal detects damage and mix-ups, not forgery: whoever can write the
// store can also change the code it certifies.
package certify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/contested/contested/internal/gate"
)

// Schema is the "schema" of a certificate.
const Schema = "contested/certificate@1"

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
	// Digest is the input digest the result was reached with.
	Digest string `json:"digest"`
	// RunID, Commit, Dirty and At say which run reached it: its id, the
	// commit it ran and whether that had uncommitted changes, and when.
	RunID  string    `json:"run_id"`
	Commit string    `json:"commit,omitempty"`
	Dirty  bool      `json:"dirty,omitempty"`
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
	Seal    string               `json:"seal"`
}

// Certifiable reports whether a verdict may be certified: only a passing
// package and a GREEN surface. RED, INCONCLUSIVE, PARTIAL, CANNOT RUN and
// a refused gate never are.
func Certifiable(kind, verdict string) bool {
	return kind == KindPackage && verdict == "PASS" || kind == KindSurface && verdict == "GREEN"
}

// seal is the HMAC of the certificate's content without its seal, keyed
// by the module path.
func (c Certificate) seal() (string, error) {
	c.Seal = ""
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	key := sha256.Sum256([]byte(Schema + "\x00" + c.Module))
	m := hmac.New(sha256.New, key[:])
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil)), nil
}

// Sealed returns c with its schema set and its seal computed.
func Sealed(c Certificate) (Certificate, error) {
	c.Schema = Schema
	s, err := c.seal()
	if err != nil {
		return c, fmt.Errorf("seal the certificate: %w", err)
	}
	c.Seal = s
	return c, nil
}

// Open parses a stored certificate and checks it: its schema, its module,
// its seal and that its verdict is one that may be certified.
func Open(data []byte, module string) (Certificate, error) {
	var c Certificate
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("%w: it does not parse (%v)", ErrSeal, err)
	}
	if c.Schema != Schema {
		return c, fmt.Errorf("%w: schema %q, want %q", ErrSeal, c.Schema, Schema)
	}
	if c.Module != module {
		return c, fmt.Errorf("%w: it was written for module %q, not %q", ErrSeal, c.Module, module)
	}
	want, err := c.seal()
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrSeal, err)
	}
	if !hmac.Equal([]byte(want), []byte(c.Seal)) {
		return c, fmt.Errorf("%w: its seal does not match its content (edited or damaged)", ErrSeal)
	}
	if !Certifiable(c.Kind, c.Verdict) {
		return c, fmt.Errorf("%w: a %s %s is never a certificate", ErrSeal, c.Kind, c.Verdict)
	}
	return c, nil
}

// Keep is how many certificates of one kind and key a store holds, one
// per digest, the newest kept: enough for a reverted change, or a switch
// between a few branches, to find the result its inputs already earned,
// and for one developer's branch not to take main's certificate from the
// rest of the team.
const Keep = 8

// Set is the certificates a store holds for a module, by kind, key and
// digest, and one line for each it ignored.
type Set struct {
	byKey   map[string][]Certificate // newest first
	Ignored []string
}

func key(kind, k string) string { return kind + "\x00" + k }

// Get returns the certificate of kind for key whose inputs had digest, if
// a valid one is held.
func (s *Set) Get(kind, k, digest string) (Certificate, bool) {
	if s == nil {
		return Certificate{}, false
	}
	for _, c := range s.byKey[key(kind, k)] {
		if c.Digest == digest {
			return c, true
		}
	}
	return Certificate{}, false
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

// add holds c, newest first; of two with one digest the newer stays.
func (s *Set) add(c Certificate) {
	if s.byKey == nil {
		s.byKey = map[string][]Certificate{}
	}
	k := key(c.Kind, c.Key)
	cs := s.byKey[k]
	if i := slices.IndexFunc(cs, func(o Certificate) bool { return o.Digest == c.Digest }); i >= 0 {
		if !c.At.After(cs[i].At) {
			return
		}
		cs = slices.Delete(cs, i, i+1)
	}
	i, _ := slices.BinarySearchFunc(cs, c, func(o, c Certificate) int { return c.At.Compare(o.At) })
	s.byKey[k] = slices.Insert(cs, i, c)
}

func marshal(c Certificate) ([]byte, error) { return json.Marshal(c) }
