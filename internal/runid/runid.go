// Package runid makes, checks and reads run ids: the name of one run, which
// every record, lease, container, network and label of the run carries.
// Run ids name Docker resources, so their charset is Docker's for names.
package runid

import (
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/contested/contested/internal/envvar"
)

// MaxLen bounds a run id; it leaves room for the suffix of [Unique].
const MaxLen = 48

// Charset says what a run id may hold.
const Charset = "letters, digits, '.', '_' and '-', starting with a letter or digit"

// ErrBad: a run id outside the documented charset or length, or set but
// empty.
var ErrBad = errors.New("bad run id")

// Check reports whether id is a valid run id: 1 to MaxLen characters of
// Charset.
func Check(id string) error {
	if id == "" || len(id) > MaxLen {
		return fmt.Errorf("%w: %q: want 1 to %d characters (%s)", ErrBad, id, MaxLen, Charset)
	}
	for i, c := range id {
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || (c != '.' && c != '_' && c != '-')) {
			return fmt.Errorf("%w: %q: character %d (%q) is not allowed; use %s, at most %d", ErrBad, id, i+1, c, Charset, MaxLen)
		}
	}
	return nil
}

// New returns a run id for time t: t in UTC as 20060102T150405Z, a dash and
// 4 random hex digits, such as "20261129T101500Z-4f2a".
func New(t time.Time) string {
	return fmt.Sprintf("%s-%04x", t.UTC().Format("20060102T150405Z"), rand.Uint32()&0xffff)
}

// Unique suffixes a shared run id for a layer of this process's own: eight
// random hex digits (32 bits, so that even a few hundred packages started
// at once almost surely never collide).
func Unique(id string) string {
	var b [4]byte
	_, _ = crand.Read(b[:])
	return id + "-" + hex.EncodeToString(b[:])
}

// FromEnv reads CONTESTED_RUN_ID: the id and shared=true when it is set (a
// parent handed it to this process, and may hand it to others), a fresh id
// and shared=false when it is unset. A set but empty or invalid id is an
// error wrapping [ErrBad] that says what to set.
func FromEnv() (id string, shared bool, err error) {
	v, set := os.LookupEnv(envvar.RunID)
	v = strings.TrimSpace(v)
	switch {
	case set && v == "":
		return "", false, fmt.Errorf("%w: %s is set but empty; unset it for a generated id, or give one (%s, at most %d)", ErrBad, envvar.RunID, Charset, MaxLen)
	case v == "":
		return New(time.Now()), false, nil
	}
	if err := Check(v); err != nil {
		return "", false, fmt.Errorf("%s: %w", envvar.RunID, err)
	}
	return v, true, nil
}
