package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/anishathalye/porcupine"
)

// A Model is a sequential specification that Check holds a history against. Accounts and
// Lease are the two this package provides; a new one needs only these three methods.
type Model interface {
	// Name names the model in results and visualization files.
	Name() string
	// Translate turns one recorded op into the porcupine input and output the model steps
	// on. It sees every op, including failed and timed-out ones (see Op.Failed and
	// Op.Ambiguous), and returns Drop for an op that carries no information, which may only
	// be a read that failed or timed out. An op the model cannot understand is an error
	// wrapping ErrInvalidHistory.
	Translate(op Op) (Translated, error)
	// Porcupine returns the porcupine model. Its Partition function, if any, must put every
	// op in exactly one partition (Check verifies the count) and must only split the history
	// where the parts are truly independent.
	Porcupine() porcupine.Model
}

// Translated is one op as a model sees it.
type Translated struct {
	Input, Output any
	// Drop leaves the op out of the check. Only failed or timed-out reads may be dropped:
	// they neither changed state nor observed it.
	Drop bool
}

// Outcome words recorded in an op's output.
const (
	OutcomeOK       = "ok"        // the op took effect
	OutcomeRejected = "rejected"  // transfer: refused for insufficient funds; nothing moved
	OutcomeFenced   = "fenced"    // renew, release, reclaim: the epoch or holder no longer matched
	OutcomeNoneFree = "none-free" // acquire: every port was held
)

// Op types the models understand.
const (
	TypeRead     = "read"     // Accounts: key = account, output = balance
	TypeWrite    = "write"    // Accounts: key = account, input = new balance
	TypeDeposit  = "deposit"  // Accounts: key = account, input = amount added
	TypeTransfer = "transfer" // Accounts: input = Transfer, output = ok | rejected
	TypeAcquire  = "acquire"  // Lease: input = LeaseRef{Holder}, output = Acquired | "none-free"
	TypeRenew    = "renew"    // Lease: input = LeaseRef, output = ok | fenced
	TypeRelease  = "release"  // Lease: input = LeaseRef, output = ok | fenced
	TypeReclaim  = "reclaim"  // Lease: input = LeaseRef{Port, Epoch}, output = ok | fenced
)

// result is how a model sees an op's outcome.
type result uint8

const (
	resOK       result = iota + 1 // took effect; for reads, returned a value
	resRejected                   // definite business refusal (insufficient funds)
	resFenced                     // definite: the fence did not match
	resNoneFree                   // definite: no port was free
	resFailed                     // definite failure with no effect, no business outcome
	resUnknown                    // ambiguous: may or may not have taken effect
)

func (r result) String() string {
	switch r {
	case resOK:
		return OutcomeOK
	case resRejected:
		return OutcomeRejected
	case resFenced:
		return OutcomeFenced
	case resNoneFree:
		return OutcomeNoneFree
	case resFailed:
		return "failed"
	case resUnknown:
		return "unknown"
	}
	return "?"
}

// outcomeWord reads an output that is one of the Outcome words, or empty (nil/null).
func outcomeWord(raw json.RawMessage) (string, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return "", true
	}
	var s string
	if err := json.Unmarshal(t, &s); err != nil {
		return "", false
	}
	return s, true
}

// decodeInput decodes an op's input into v, naming the op on failure.
func decodeInput(op Op, v any) error {
	if len(op.Input) == 0 {
		return fmt.Errorf("%w: op %d (%s) has no input", ErrInvalidHistory, op.ID, op.Type)
	}
	if err := json.Unmarshal(op.Input, v); err != nil {
		return fmt.Errorf("%w: op %d (%s) input %s: %v", ErrInvalidHistory, op.ID, op.Type, op.Input, err)
	}
	return nil
}

func badOutput(op Op, want string) error {
	return fmt.Errorf("%w: op %d (%s) output %s: want %s", ErrInvalidHistory, op.ID, op.Type, orNull(op.Output), want)
}

// mix64 is the splitmix64 finalizer: a cheap, well-spread 64-bit mix.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}
