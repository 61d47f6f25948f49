package history

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Bank is the model of a bank: the Accounts ledger (every op of it, checked for
// linearizability the same way) with its two promises audited in plain words over the ops'
// real-time order:
//
//   - conservation: the balances of every account, read at once (a balances op with no
//     input), sum to the opening total plus the deposits that may have landed by then (every
//     deposit answered ok before the read began, and any other not failed that began before
//     the read ended); a history that writes balances directly promises no total and is not
//     held to it;
//   - no negative balance: no read or balances op returns a balance below zero.
//
// A transfer answered ok without the funds is a linearizability violation already (it would
// take the source below zero); the audit names what a client saw of it.
type Bank struct {
	*Accounts
	opening map[string]int64
}

var _ Auditor = (*Bank)(nil)

// NewBank returns the bank model opening with the given balances (nil: all zero).
func NewBank(opening map[string]int64) *Bank {
	return &Bank{Accounts: NewAccounts(opening), opening: maps.Clone(opening)}
}

// Name implements Model.
func (b *Bank) Name() string { return "bank" }

// Audit implements Auditor.
func (b *Bank) Audit(ops []Op) Audit {
	var total int64
	for _, v := range b.opening {
		total += v
	}
	conserve := newAudit("money is conserved", 0)
	negative := newAudit("no balance goes below zero", 0)
	writes := slices.ContainsFunc(ops, func(op Op) bool { return op.Type == TypeWrite && !op.Failed() })
	for _, i := range sortedByInvoke(ops) {
		op := ops[i]
		if op.Timeout || op.Error != "" {
			continue
		}
		switch op.Type {
		case TypeRead:
			negative.prop.Checked++
			var v int64
			if json.Unmarshal(op.Output, &v) == nil && v < 0 {
				negative.found(fmt.Sprintf("negative balance: %s read %s = %d at %s", op.Process, op.Key, v, opSpan(op)), op.ID)
			}
		case TypeBalances:
			negative.prop.Checked++
			var bals map[string]int64
			if json.Unmarshal(op.Output, &bals) != nil {
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(bals)) {
				if bals[k] < 0 {
					negative.found(fmt.Sprintf("negative balance: %s read %s = %d at %s", op.Process, k, bals[k], opSpan(op)), op.ID)
				}
			}
			if writes || len(op.Input) > 0 {
				continue // a total only of some accounts, or of a ledger written directly
			}
			conserve.prop.Checked++
			b.conserved(conserve, op, bals, total, ops)
		}
	}
	switch {
	case writes:
		conserve.prop.Note = "the history writes balances directly, which promises no total"
	case conserve.prop.Checked == 0:
		conserve.prop.Note = "no balances op read every account at once; the search still holds every transfer to the funds rule"
	}
	var a Audit
	a.add(conserve)
	a.add(negative)
	return a
}

// conserved holds one read of every balance to the total: the opening total plus the deposits
// that certainly landed before it began, give or take those that may have.
func (b *Bank) conserved(a *audit, read Op, bals map[string]int64, total int64, ops []Op) {
	lo, hi := total, total
	var ids []int64
	for _, d := range ops {
		if d.Type != TypeDeposit || d.Failed() || d.Invoke >= gaveUp(read) {
			continue
		}
		var amt int64
		if json.Unmarshal(d.Input, &amt) != nil {
			continue
		}
		if done(d) < read.Invoke {
			lo, hi = lo+amt, hi+amt
			continue
		}
		ids = append(ids, d.ID)
		lo, hi = lo+min(0, amt), hi+max(0, amt)
	}
	var sum int64
	for _, v := range bals {
		sum += v
	}
	if sum >= lo && sum <= hi {
		return
	}
	want := fmt.Sprintf("%d", lo)
	if lo != hi {
		want = fmt.Sprintf("between %d and %d", lo, hi)
	}
	diff := sum - lo
	if sum > hi {
		diff = sum - hi
	}
	verb := "created"
	if diff < 0 {
		verb, diff = "lost", -diff
	}
	a.found(fmt.Sprintf("money not conserved: the balances %s read at %s sum to %d, not %s (%d %s)", read.Process, opSpan(read), sum, want, diff, verb),
		append([]int64{read.ID}, ids...)...)
}
