package shard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadSpec means a shard was named by something other than I/N with
// 1 ≤ I ≤ N.
var ErrBadSpec = errors.New("bad shard")

// MaxTotal bounds N: more shards than this is a typo, not a CI matrix.
const MaxTotal = 256

// Spec names one shard of a battery split N ways: Index is 1-based.
type Spec struct {
	Index int `json:"index"`
	Total int `json:"total"`
}

var _ fmt.Stringer = Spec{}

// String is "I/N".
func (s Spec) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Total) }

// Tag is the shard in a run id: "s2of3".
func (s Spec) Tag() string { return "s" + strconv.Itoa(s.Index) + "of" + strconv.Itoa(s.Total) }

// IsZero reports whether s names no shard (an unsharded run).
func (s Spec) IsZero() bool { return s == Spec{} }

// Parse reads "I/N": two decimal integers, 1 ≤ I ≤ N ≤ [MaxTotal], nothing
// else (no spaces, signs or zero padding). what names where the value came
// from ("-shard", "CONTESTED_SHARD") for the message, which says what to
// write.
func Parse(what, v string) (Spec, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s=%q %s; write I/N, the shard's number and the shard count, such as %s=2/3 (1 ≤ I ≤ N ≤ %d)", ErrBadSpec, what, v, why, what, MaxTotal)
	}
	i, n, ok := strings.Cut(v, "/")
	if !ok {
		return Spec{}, bad("has no '/'")
	}
	index, err := number(i)
	if err != nil {
		return Spec{}, bad("has a shard number that is not a positive integer")
	}
	total, err := number(n)
	if err != nil {
		return Spec{}, bad("has a shard count that is not a positive integer")
	}
	switch {
	case total > MaxTotal:
		return Spec{}, bad("splits into more shards than " + strconv.Itoa(MaxTotal))
	case index > total:
		return Spec{}, bad("names a shard past the count")
	}
	return Spec{Index: index, Total: total}, nil
}

// number reads a positive decimal integer without sign, spaces or leading
// zeros.
func number(s string) (int, error) {
	if s == "" || s[0] == '0' || len(s) > 4 {
		return 0, ErrBadSpec
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, ErrBadSpec
		}
	}
	return strconv.Atoi(s)
}
