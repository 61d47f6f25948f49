package history

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Transfer is the input of a transfer op: move Amount from From to To if From holds at least
// Amount, else refuse with output "rejected" and move nothing.
type Transfer struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Amount int64  `json:"amount"`
}

// Accounts is the model of a ledger: a map from account to balance, where an account never
// written holds 0. Its ops (key = the account):
//
//	read      output: the balance (a JSON integer); one that failed or timed out observed
//	          nothing and is legal in every state
//	write     input: the new balance; output: null or "ok"
//	deposit   input: the amount added; output: null or "ok"
//	transfer  input: Transfer; output: "ok" (moved) or "rejected" (From held less than Amount)
//	balances  output: the balances of several accounts read at once (an object, account →
//	          integer; an account left out is not compared); unanswered, legal in every state
//
// A transfer answered ok while From held less than Amount creates money, and one answered
// rejected while From held enough refuses a legal transfer: both make the history illegal.
// A definite failure (error, not timeout, no output) is a no-op.
//
// Reads and writes of one account are independent of every other account only when no
// transfer links two accounts, so the history is checked per account when it has no transfer
// between two different accounts, and as one partition otherwise.
type Accounts struct {
	init *accState
}

// NewAccounts returns the Accounts model starting from the given balances (nil: all zero).
func NewAccounts(initial map[string]int64) *Accounts {
	s := &accState{bal: make(map[string]int64, len(initial))}
	for k, v := range initial {
		if v != 0 {
			s.bal[k] = v
			s.h += entryHash(k, v)
		}
	}
	return &Accounts{init: s}
}

// Name implements Model.
func (a *Accounts) Name() string { return "accounts" }

type accKind uint8

const (
	accRead accKind = iota + 1
	accWrite
	accDeposit
	accTransfer
	accBalances
)

// accIn is the porcupine input: comparable, no pointers.
type accIn struct {
	kind    accKind
	key, to string // key is the account, or the source of a transfer
	amount  int64  // written value, deposit or transfer amount
}

// accOut is the porcupine output.
type accOut struct {
	res      result
	value    int64            // balance a read returned
	balances map[string]int64 // the balances a balances op returned
}

// Translate implements Model.
func (a *Accounts) Translate(op Op) (Translated, error) {
	in := accIn{key: op.Key}
	switch op.Type {
	case TypeRead:
		if op.Key == "" {
			return Translated{}, fmt.Errorf("%w: op %d (read) has no key", ErrInvalidHistory, op.ID)
		}
		in.kind = accRead
		switch {
		case op.Timeout:
			// No answer came: it observed nothing, and is legal in every state.
			return Translated{Input: in, Output: accOut{res: resUnknown}}, nil
		case op.Error != "":
			return Translated{Input: in, Output: accOut{res: resFailed}}, nil
		}
		var v int64
		if err := json.Unmarshal(op.Output, &v); err != nil || len(op.Output) == 0 {
			return Translated{}, badOutput(op, "the balance, an integer")
		}
		return Translated{Input: in, Output: accOut{res: resOK, value: v}}, nil
	case TypeWrite, TypeDeposit:
		if op.Key == "" {
			return Translated{}, fmt.Errorf("%w: op %d (%s) has no key", ErrInvalidHistory, op.ID, op.Type)
		}
		in.kind = accWrite
		if op.Type == TypeDeposit {
			in.kind = accDeposit
		}
		if err := decodeInput(op, &in.amount); err != nil {
			return Translated{}, err
		}
		res, err := plainOutcome(op)
		return Translated{Input: in, Output: accOut{res: res}}, err
	case TypeBalances:
		in.kind = accBalances
		switch {
		case op.Timeout:
			return Translated{Input: in, Output: accOut{res: resUnknown}}, nil
		case op.Error != "":
			return Translated{Input: in, Output: accOut{res: resFailed}}, nil
		}
		var bals map[string]int64
		if err := json.Unmarshal(op.Output, &bals); err != nil || bals == nil {
			return Translated{}, badOutput(op, "the balances, an object of account → integer")
		}
		return Translated{Input: in, Output: accOut{res: resOK, balances: bals}}, nil
	case TypeTransfer:
		var t Transfer
		if err := decodeInput(op, &t); err != nil {
			return Translated{}, err
		}
		if t.From == "" || t.To == "" {
			return Translated{}, fmt.Errorf("%w: op %d (transfer) input %s: want from and to", ErrInvalidHistory, op.ID, op.Input)
		}
		in = accIn{kind: accTransfer, key: t.From, to: t.To, amount: t.Amount}
		var res result
		switch w, ok := outcomeWord(op.Output); {
		case op.Timeout:
			res = resUnknown
		case ok && w == OutcomeOK:
			res = resOK
		case ok && w == OutcomeRejected:
			res = resRejected
		case ok && w == "" && op.Error != "":
			res = resFailed
		default:
			return Translated{}, badOutput(op, `"ok" or "rejected"`)
		}
		return Translated{Input: in, Output: accOut{res: res}}, nil
	}
	return Translated{}, fmt.Errorf("%w: op %d: the accounts model has no op type %q", ErrInvalidHistory, op.ID, op.Type)
}

// plainOutcome reads the outcome of an op whose only answer is "done".
func plainOutcome(op Op) (result, error) {
	w, ok := outcomeWord(op.Output)
	switch {
	case op.Timeout:
		return resUnknown, nil
	case op.Error != "" && ok && w == "":
		return resFailed, nil
	case op.Error == "" && ok && (w == "" || w == OutcomeOK):
		return resOK, nil
	}
	return 0, badOutput(op, `null or "ok"`)
}

// accState is an immutable balance map: every step that changes it copies it. Zero balances
// are not stored, so equal ledgers have equal maps. h is the sum of entryHash over the
// entries, kept up to date on every change so Hash is O(1).
type accState struct {
	bal map[string]int64
	h   uint64
}

func entryHash(k string, v int64) uint64 { return mix64(hashString(k) ^ mix64(uint64(v))) }

// with returns a copy of s with the given balances changed.
func (s *accState) with(ctx context.Context, changes ...accChange) (*accState, bool) {
	if len(s.bal) > 4096 && ctx.Err() != nil {
		return nil, false
	}
	n := &accState{bal: maps.Clone(s.bal), h: s.h}
	if n.bal == nil {
		n.bal = make(map[string]int64, 2)
	}
	for _, c := range changes {
		if old, ok := n.bal[c.key]; ok {
			n.h -= entryHash(c.key, old)
			delete(n.bal, c.key)
		}
		if c.val != 0 {
			n.bal[c.key] = c.val
			n.h += entryHash(c.key, c.val)
		}
	}
	return n, true
}

type accChange struct {
	key string
	val int64
}

// step moves one ledger on one op; see family.step.
func (a *Accounts) step(ctx context.Context, s *accState, input, output any, emit func(*accState)) {
	in, out := input.(accIn), output.(accOut)
	if out.res == resFailed || ((in.kind == accRead || in.kind == accBalances) && out.res == resUnknown) {
		emit(s) // a definite failure changed nothing; an unanswered read observed nothing
		return
	}
	var changes []accChange
	switch in.kind {
	case accRead:
		if s.bal[in.key] == out.value {
			emit(s)
		}
		return
	case accBalances:
		for k, v := range out.balances {
			if s.bal[k] != v {
				return
			}
		}
		emit(s)
		return
	case accWrite:
		changes = []accChange{{in.key, in.amount}}
	case accDeposit:
		changes = []accChange{{in.key, s.bal[in.key] + in.amount}}
	case accTransfer:
		funds := s.bal[in.key] >= in.amount
		switch {
		case out.res == resRejected:
			if !funds {
				emit(s)
			}
			return
		case !funds:
			if out.res == resUnknown {
				emit(s) // refused, whatever the client heard
			}
			return // ok without the funds: money created
		case in.key == in.to:
			emit(s)
			return
		}
		changes = []accChange{{in.key, s.bal[in.key] - in.amount}, {in.to, s.bal[in.to] + in.amount}}
	default:
		return
	}
	if out.res == resUnknown {
		emit(s) // it may not have happened (yet)
	}
	if n, ok := s.with(ctx, changes...); ok {
		emit(n)
	}
}

// Porcupine implements Model.
func (a *Accounts) Porcupine() porcupine.Model {
	f := &family[*accState]{
		hash:     func(s *accState) uint64 { return s.h },
		equal:    func(s, t *accState) bool { return s == t || (s.h == t.h && maps.Equal(s.bal, t.bal)) },
		step:     a.step,
		describe: describeAccounts,
	}
	pm := f.porcupine(a.init)
	pm.Partition = partitionAccounts
	pm.DescribeOperation = describeAccountsOp
	return pm
}

// partitionAccounts splits by account unless some transfer links two accounts.
func partitionAccounts(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := make(map[string][]porcupine.Operation)
	var keys []string
	for _, op := range history {
		in := op.Input.(accIn)
		if (in.kind == accTransfer && in.key != in.to) || in.kind == accBalances {
			return [][]porcupine.Operation{history}
		}
		if _, ok := byKey[in.key]; !ok {
			keys = append(keys, in.key)
		}
		byKey[in.key] = append(byKey[in.key], op)
	}
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

func describeAccountsOp(input, output any) string {
	in, out := input.(accIn), output.(accOut)
	var s string
	switch in.kind {
	case accRead:
		s = fmt.Sprintf("read(%s) → %d", in.key, out.value)
		if out.res != resOK {
			s = fmt.Sprintf("read(%s) → no answer (%s)", in.key, out.res)
		}
	case accWrite:
		s = fmt.Sprintf("write(%s, %d) → %s", in.key, in.amount, out.res)
	case accDeposit:
		s = fmt.Sprintf("deposit(%s, %d) → %s", in.key, in.amount, out.res)
	case accTransfer:
		s = fmt.Sprintf("transfer(%s → %s, %d) → %s", in.key, in.to, in.amount, out.res)
	case accBalances:
		s = "balances → no answer (" + out.res.String() + ")"
		if out.res == resOK {
			s = "balances → " + describeBalances(out.balances)
		}
	}
	return html.EscapeString(s)
}

// describeAccounts shows the ledger, sorted by account, at most 24 accounts.
func describeAccounts(s *accState) string { return html.EscapeString(describeBalances(s.bal)) }

// describeBalances shows balances, sorted by account, at most 24 accounts.
func describeBalances(bal map[string]int64) string {
	keys := slices.Sorted(maps.Keys(bal))
	var b strings.Builder
	for i, k := range keys {
		if i == 24 {
			fmt.Fprintf(&b, " … and %d more", len(keys)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%d", k, bal[k])
	}
	if len(keys) == 0 {
		b.WriteString("(all zero)")
	}
	return b.String()
}
