package oracle

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/examples/ledger"
)

// Sample is one in-run reading of the sum of balances, taken directly (bypassing any fault)
// in one statement, so it is a committed state of the ledger.
type Sample struct {
	At    time.Duration // since the run started
	Total int64
}

// CheckConservation holds that the sum of balances never changed: in every in-run sample and
// at quiescence it equals the opening total. Money moved between accounts is fine; money made
// or lost (a debit committed without its credit, a credit applied twice) is not.
func CheckConservation(opening int64, samples []Sample, final State) Verdict {
	v := Verdict{Oracle: Conservation, Produced: len(samples) + 1}
	for _, s := range samples {
		v.Checked++
		if s.Total != opening {
			v.violate("at %s the balances summed to %d, not %d (%+d)", s.At.Round(time.Millisecond), s.Total, opening, s.Total-opening)
		}
	}
	v.Checked++
	if t := final.Total(); t != opening {
		v.violate("at quiescence the balances sum to %d, not %d (%+d)", t, opening, t-opening)
	}
	v.Evidence = fmt.Sprintf("opening total %d; %d in-run samples and the final state checked", opening, len(samples))
	return v
}

// CheckJournal holds that every balance is its opening balance plus the postings in and
// minus the postings out: no balance changed without a journal entry, and no entry lacks its
// balance change.
func CheckJournal(opening map[string]int64, final State) Verdict {
	v := Verdict{Oracle: Journal}
	want := maps.Clone(opening)
	for _, p := range final.Postings {
		want[p.From] -= p.Amount
		want[p.To] += p.Amount
	}
	accounts := slices.Sorted(maps.Keys(want))
	for _, a := range slices.Sorted(maps.Keys(final.Balances)) {
		if _, ok := want[a]; !ok {
			accounts = append(accounts, a)
		}
	}
	v.Produced = len(accounts)
	for _, a := range accounts {
		v.Checked++
		got, ok := final.Balances[a]
		switch {
		case !ok:
			v.violate("account %s vanished", a)
		case got != want[a]:
			v.violate("account %s holds %d, but its opening balance and postings say %d (%+d)", a, got, want[a], got-want[a])
		}
	}
	v.Evidence = fmt.Sprintf("%d accounts against %d postings", len(accounts), len(final.Postings))
	return v
}

// attempts is what the history says about one transfer id.
type attempts struct {
	transfer  ledger.Transfer
	conflict  string // two attempts carried different content
	ops       int
	applied   int // store answered applied
	rejected  int // store answered rejected
	duplicate int // store answered duplicate
	acked     []int64
	ambiguous int
	failed    int // definite failures
	direct    int // transfer ops (Store.Transfer), as opposed to enqueues
}

// maybeEffective: some attempt may have taken effect.
func (a *attempts) maybeEffective() bool {
	return a.applied+a.rejected+a.duplicate+len(a.acked)+a.ambiguous > 0
}

// tally groups the transfer and enqueue ops of a history by business transfer id (never by
// op id: retries and redeliveries of one transfer are different ops with the same id).
func tally(ops []history.Op) (map[string]*attempts, []string, error) {
	by := map[string]*attempts{}
	var order []string
	for _, op := range ops {
		if op.Type != history.TypeTransfer && op.Type != TypeEnqueue {
			continue
		}
		var t ledger.Transfer
		if err := json.Unmarshal(op.Input, &t); err != nil || t.ID == "" {
			return nil, nil, fmt.Errorf("%w: op %d (%s) input %s is not a transfer with an id", history.ErrInvalidHistory, op.ID, op.Type, op.Input)
		}
		a := by[t.ID]
		if a == nil {
			a = &attempts{transfer: t}
			by[t.ID] = a
			order = append(order, t.ID)
		} else if a.transfer != t && a.conflict == "" {
			a.conflict = fmt.Sprintf("op %d carries %+v, an earlier attempt %+v", op.ID, t, a.transfer)
		}
		a.ops++
		if op.Type == history.TypeTransfer {
			a.direct++
		}
		var word string
		_ = json.Unmarshal(op.Output, &word)
		switch {
		case op.Ambiguous():
			a.ambiguous++
		case op.Error == DuplicateAnswer:
			a.duplicate++
		case op.Failed():
			a.failed++
		case op.Type == TypeEnqueue:
			var e Enqueued
			if err := json.Unmarshal(op.Output, &e); err != nil || e.Seq == 0 {
				return nil, nil, fmt.Errorf("%w: op %d (enqueue) output %s: want {\"seq\":n}", history.ErrInvalidHistory, op.ID, op.Output)
			}
			a.acked = append(a.acked, e.Seq)
		case word == history.OutcomeOK:
			a.applied++
		case word == history.OutcomeRejected:
			a.rejected++
		default:
			return nil, nil, fmt.Errorf("%w: op %d (transfer) output %s: want \"ok\" or \"rejected\"", history.ErrInvalidHistory, op.ID, op.Output)
		}
	}
	return by, order, nil
}

// CheckExactlyOnce holds that every transfer id moved money at most once, that an
// acknowledged transfer moved it exactly once if it was applied and never if it was
// rejected, and that nothing was invented: every posting and decision belongs to a transfer a
// client issued, with the content it issued, and at least one attempt of it may have taken
// effect. On the queue's side it holds that one delivery decided each transfer the queue
// carried and that every acknowledged row says what applying it did (see checkDeliveries).
// It groups by the business transfer id, never by op id.
func CheckExactlyOnce(ops []history.Op, final State) Verdict {
	v := Verdict{Oracle: ExactlyOnce}
	by, order, err := tally(ops)
	if err != nil {
		v.Inconclusive = err.Error()
		return v
	}
	posts := map[string][]Posting{}
	for _, p := range final.Postings {
		posts[p.TransferID] = append(posts[p.TransferID], p)
	}
	v.Produced = len(order)
	for _, id := range order {
		a := by[id]
		v.Checked++
		n := len(posts[id])
		d, decided := final.Decided[id]
		if a.conflict != "" {
			v.violate("transfer %s was issued with two contents: %s", id, a.conflict)
		}
		if n > 1 {
			v.violate("transfer %s was applied %d times (postings: %v)", id, n, posts[id])
		}
		if n > 0 && !a.maybeEffective() {
			v.violate("transfer %s was applied although every one of its %d attempts definitely failed (invented)", id, a.ops)
		}
		for _, p := range posts[id] {
			if p.From != a.transfer.From || p.To != a.transfer.To || p.Amount != a.transfer.Amount {
				v.violate("transfer %s was posted as %s→%s %d but issued as %s→%s %d (invented)", id, p.From, p.To, p.Amount, a.transfer.From, a.transfer.To, a.transfer.Amount)
			}
		}
		if a.applied > 0 && n != 1 {
			v.violate("transfer %s was answered applied but posted %d times", id, n)
		}
		if a.rejected > 0 && n != 0 {
			v.violate("transfer %s was answered rejected but posted %d times", id, n)
		}
		if a.applied > 0 && a.rejected > 0 {
			v.violate("transfer %s was answered both applied and rejected", id)
		}
		if decided && n == 0 && !a.maybeEffective() {
			v.violate("transfer %s was decided (%s) although every one of its %d attempts definitely failed (invented)", id, d.Outcome, a.ops)
		}
		if decided {
			if d.From != a.transfer.From || d.To != a.transfer.To || d.Amount != a.transfer.Amount {
				v.violate("transfer %s was decided as %s→%s %d but issued as %s→%s %d (invented)", id, d.From, d.To, d.Amount, a.transfer.From, a.transfer.To, a.transfer.Amount)
			}
			switch {
			case d.Outcome == ledger.Applied && n == 0:
				v.violate("transfer %s is recorded applied but has no posting", id)
			case d.Outcome == ledger.Rejected && n != 0:
				v.violate("transfer %s is recorded rejected but has %d postings", id, n)
			}
		} else if n > 0 {
			v.violate("transfer %s has %d postings but no decision: it escaped the idempotency key", id, n)
		}
	}
	checkDeliveries(&v, by, order, final)
	for _, id := range slices.Sorted(maps.Keys(final.Decided)) {
		if by[id] == nil {
			v.Checked++
			v.violate("transfer %s was decided (%s) but no client issued it (invented)", id, final.Decided[id].Outcome)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(posts)) {
		if by[id] == nil && final.Decided[id].Outcome == "" {
			v.Checked++
			v.violate("transfer %s was posted but no client issued it (invented)", id)
		}
	}
	v.Evidence = fmt.Sprintf("%d transfer ids from %d ops, grouped by transfer id, against %d postings and %d decisions",
		len(order), countTyped(ops), len(final.Postings), len(final.Decided))
	return v
}

// checkDeliveries holds the queue's side of exactly-once: every acknowledged row says what
// applying it did (applied, rejected or duplicate), at most one delivery of a transfer id
// decided it, that delivery's acknowledgement carries the decision the ledger recorded, and a
// transfer that only the queue carried was decided by one of its deliveries.
func checkDeliveries(v *Verdict, by map[string]*attempts, order []string, final State) {
	deciding := map[string][]QueueRow{}
	acked := map[string]int{}
	for _, q := range final.Queue {
		if !q.Acked {
			continue
		}
		acked[q.TransferID]++
		switch ledger.Outcome(q.Outcome) {
		case ledger.Applied, ledger.Rejected:
			deciding[q.TransferID] = append(deciding[q.TransferID], q)
		case ledger.Duplicate:
		default:
			v.violate("queue row %d (transfer %s) was acknowledged as %q, which is not an outcome of applying a transfer", q.Seq, q.TransferID, q.Outcome)
		}
	}
	for _, id := range order {
		if acked[id] == 0 {
			continue
		}
		rows := deciding[id]
		d, decided := final.Decided[id]
		if len(rows) > 1 {
			seqs := make([]int64, len(rows))
			for i, r := range rows {
				seqs[i] = r.Seq
			}
			v.violate("transfer %s was decided by %d deliveries (rows %v): a redelivery must answer duplicate", id, len(rows), seqs)
		}
		for _, r := range rows {
			switch {
			case !decided:
				v.violate("queue row %d acknowledged transfer %s as %s, but the ledger has no decision for it", r.Seq, id, r.Outcome)
			case ledger.Outcome(r.Outcome) != d.Outcome:
				v.violate("queue row %d acknowledged transfer %s as %s, but the ledger decided it %s", r.Seq, id, r.Outcome, d.Outcome)
			}
		}
		if decided && len(rows) == 0 && by[id].direct == 0 {
			v.violate("transfer %s was decided (%s), but none of its %d acknowledged deliveries says so", id, d.Outcome, acked[id])
		}
	}
}

// CheckDecisions replays every decision the ledger recorded, in its serial order (the turns
// drawn while each decision held its accounts' locks), from the opening balances. It holds
// that each decision is the one the rule dictates (applied exactly when both accounts exist
// and the source held at least the amount at its turn, rejected otherwise) and that the
// replay ends at the balances the ledger holds. It judges every decision however it was made,
// a client's transfer or a consumer's batch, so a wrong rejection rule or a decision taken on
// a stale balance is caught on every leg, with or without a linearizability check.
func CheckDecisions(opening map[string]int64, final State) Verdict {
	v := Verdict{Oracle: Decisions, Produced: len(final.Decided)}
	ids := slices.SortedFunc(maps.Keys(final.Decided), func(a, b string) int {
		return cmp.Compare(final.Decided[a].Turn, final.Decided[b].Turn)
	})
	balance := maps.Clone(opening)
	exists := func(a string) bool {
		_, open := opening[a]
		_, held := final.Balances[a]
		return open || held
	}
	var applied, rejected, exact int
	for i, id := range ids {
		d := final.Decided[id]
		v.Checked++
		if i > 0 && final.Decided[ids[i-1]].Turn == d.Turn {
			v.violate("transfers %s and %s share turn %d: the decisions have no serial order", ids[i-1], id, d.Turn)
		}
		held := balance[d.From]
		funds := exists(d.From) && exists(d.To) && held >= d.Amount
		if held == d.Amount {
			exact++
		}
		switch d.Outcome {
		case ledger.Applied:
			applied++
			if !funds {
				v.violate("transfer %s (%s→%s %d) was applied at turn %d while %s held %d", id, d.From, d.To, d.Amount, d.Turn, d.From, held)
			}
			balance[d.From] -= d.Amount
			balance[d.To] += d.Amount
		case ledger.Rejected:
			rejected++
			if funds {
				v.violate("transfer %s (%s→%s %d) was rejected at turn %d while %s held %d, enough for it", id, d.From, d.To, d.Amount, d.Turn, d.From, held)
			}
		default:
			v.violate("transfer %s was decided %q, which is neither applied nor rejected", id, d.Outcome)
		}
	}
	for _, a := range slices.Sorted(maps.Keys(balance)) {
		if got, ok := final.Balances[a]; ok && got != balance[a] {
			v.violate("replaying the decisions in turn order leaves %s at %d, but it holds %d (%+d)", a, balance[a], got, got-balance[a])
		}
	}
	v.Evidence = fmt.Sprintf("%d decisions replayed in turn order: %d applied, %d rejected; %d asked for exactly the source's balance",
		len(ids), applied, rejected, exact)
	return v
}

// CheckBatchOrder holds that every batch applied its rows in enqueue order: among the rows
// one transaction acknowledged with a decision (applied or rejected), the decisions' turns
// rise with the rows' sequence numbers. Rows whose transfer has no decision are left to
// exactly-once and no-lost-ack.
func CheckBatchOrder(final State) Verdict {
	v := Verdict{Oracle: BatchOrder}
	batches := map[int64][]QueueRow{}
	for _, q := range final.Queue {
		if _, ok := final.Decided[q.TransferID]; !ok || !q.Acked || q.Batch == 0 {
			continue
		}
		if o := ledger.Outcome(q.Outcome); o == ledger.Applied || o == ledger.Rejected {
			batches[q.Batch] = append(batches[q.Batch], q)
		}
	}
	for _, b := range slices.Sorted(maps.Keys(batches)) {
		rows := batches[b] // final.Queue is in seq order
		v.Produced += len(rows)
		for i, r := range rows {
			v.Checked++
			if i == 0 {
				continue
			}
			p := rows[i-1]
			if pt, rt := final.Decided[p.TransferID].Turn, final.Decided[r.TransferID].Turn; rt <= pt {
				v.violate("batch %d (%s) decided row %d (transfer %s) at turn %d, before row %d (transfer %s) at turn %d, though it was enqueued after it",
					b, r.Worker, r.Seq, r.TransferID, rt, p.Seq, p.TransferID, pt)
			}
		}
	}
	v.Evidence = fmt.Sprintf("%d deciding rows in %d batches", v.Checked, len(batches))
	return v
}

// CheckNoLostAck holds that every acknowledgement was kept: an enqueue that returned its
// sequence number was decided (applied or rejected) and its queue row acknowledged, a
// transfer answered applied is in the journal, one answered rejected is recorded rejected,
// and nothing is left pending at quiescence. Ambiguous ops are not acknowledgements: they
// are counted and left alone.
func CheckNoLostAck(ops []history.Op, final State) Verdict {
	v := Verdict{Oracle: NoLostAck}
	by, order, err := tally(ops)
	if err != nil {
		v.Inconclusive = err.Error()
		return v
	}
	rows := map[int64]QueueRow{}
	for _, q := range final.Queue {
		rows[q.Seq] = q
	}
	posted := map[string]bool{}
	for _, p := range final.Postings {
		posted[p.TransferID] = true
	}
	ambiguous := 0
	for _, id := range order {
		a := by[id]
		ambiguous += a.ambiguous
		d, decided := final.Decided[id]
		for _, seq := range a.acked {
			v.Produced++
			v.Checked++
			row, ok := rows[seq]
			switch {
			case !ok:
				v.violate("enqueue of transfer %s was acknowledged as row %d, which is not in the queue", id, seq)
			case row.TransferID != id:
				v.violate("enqueue of transfer %s was acknowledged as row %d, which holds transfer %s", id, seq, row.TransferID)
			case !decided:
				v.violate("enqueue of transfer %s (row %d) was acknowledged but the transfer was never applied", id, seq)
			case !row.Acked:
				v.violate("enqueue of transfer %s (row %d) was acknowledged but the row is still pending", id, seq)
			}
		}
		if a.applied > 0 {
			v.Produced++
			v.Checked++
			if !posted[id] {
				v.violate("transfer %s was answered applied but is not in the journal", id)
			}
		}
		if a.rejected > 0 {
			v.Produced++
			v.Checked++
			if !decided || d.Outcome != ledger.Rejected {
				v.violate("transfer %s was answered rejected but is recorded %q", id, d.Outcome)
			}
		}
	}
	for _, q := range final.Queue {
		if !q.Acked {
			v.violate("queue row %d (transfer %s) is still pending at quiescence", q.Seq, q.TransferID)
		}
	}
	v.Evidence = fmt.Sprintf("%d acknowledgements checked against the final state; %d ambiguous attempts left unjudged; %d queue rows",
		v.Checked, ambiguous, len(final.Queue))
	return v
}

func countTyped(ops []history.Op) int {
	n := 0
	for _, op := range ops {
		if op.Type == history.TypeTransfer || op.Type == TypeEnqueue {
			n++
		}
	}
	return n
}
