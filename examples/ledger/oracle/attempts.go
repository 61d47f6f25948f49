package oracle

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/examples/ledger"
)

// PerTransfer derives the history the linearizability oracle checks from the recorded one:
// every attempt of one transfer id (the original and its retries, which the recorder keeps
// as separate ops, never merged) becomes one logical transfer, because the ledger applies a
// transfer id at most once however often it is sent. The server's audit (applied_transfers,
// read at quiescence) settles what the client never heard:
//
//   - a transfer some attempt got an answer for (applied, rejected, or duplicate) took effect
//     between its first attempt's invoke and that answer: one op over that interval, whose
//     output is the answer, or for a duplicate the decision the server recorded;
//   - a transfer no attempt got an answer for took effect at some unknown time after its
//     first invoke if the server decided it (one ambiguous op), and never otherwise (one
//     failed op: the statement that decides is the statement that moves money);
//   - a transfer whose attempts all failed definitely is one failed op.
//
// This removes the ambiguity that retries settled, so porcupine decides quickly and more
// sharply, without ever narrowing a transfer's interval below the truth. Other ops (reads)
// pass through unchanged. The recorded history itself is untouched.
func PerTransfer(ops []history.Op, final State) ([]history.Op, error) {
	byID := map[string][]history.Op{}
	var order []string
	var out []history.Op
	for _, op := range ops {
		if op.Type != history.TypeTransfer {
			out = append(out, op)
			continue
		}
		var t ledger.Transfer
		if err := json.Unmarshal(op.Input, &t); err != nil || t.ID == "" {
			return nil, fmt.Errorf("%w: op %d (transfer) input %s is not a transfer with an id", history.ErrInvalidHistory, op.ID, op.Input)
		}
		if _, ok := byID[t.ID]; !ok {
			order = append(order, t.ID)
		}
		byID[t.ID] = append(byID[t.ID], op)
	}
	for _, id := range order {
		attempts := byID[id]
		slices.SortFunc(attempts, func(a, b history.Op) int { return int(a.Invoke - b.Invoke) })
		first := attempts[0]
		merged := first
		merged.Error, merged.Output, merged.Timeout, merged.Complete = "", nil, false, nil
		ids := make([]int64, len(attempts))
		for i, a := range attempts {
			ids[i] = a.ID
		}
		note := ""
		if len(attempts) > 1 {
			note = fmt.Sprintf(" (ops %v merged: one transfer id)", ids)
		}
		decision, decided := final.Decided[id]
		answered := slices.IndexFunc(attempts, func(a history.Op) bool {
			return !a.Ambiguous() && (a.Error == "" || a.Error == DuplicateAnswer)
		})
		switch {
		case answered >= 0:
			a := attempts[answered]
			merged.Complete = a.Complete
			switch {
			case a.Error == "":
				merged.Output = a.Output
			case decided && decision.Outcome == ledger.Applied:
				merged.Output = json.RawMessage(`"` + history.OutcomeOK + `"`)
				note += "; duplicate answer settled by the server's decision: applied"
			case decided:
				merged.Output = json.RawMessage(`"` + history.OutcomeRejected + `"`)
				note += "; duplicate answer settled by the server's decision: rejected"
			default:
				// A duplicate answer with no decision on record: the outcome is unknown
				// here (exactly-once reports the contradiction).
				merged.Complete, merged.Timeout = nil, true
				note += "; duplicate answer but no decision on record"
			}
		case slices.ContainsFunc(attempts, history.Op.Ambiguous) && decided:
			merged.Timeout = true
			note += "; no answer, but the server decided it: it took effect at an unknown time"
		default:
			last := attempts[len(attempts)-1]
			merged.Complete = last.Complete
			if merged.Complete == nil {
				merged.Complete = history.At(last.Invoke)
			}
			merged.Error = "did not take effect: every attempt failed or was never decided by the server"
		}
		if merged.Timeout {
			merged.Error = "unknown" + note
		} else if merged.Error != "" {
			merged.Error += note
		}
		out = append(out, merged)
	}
	slices.SortFunc(out, func(a, b history.Op) int { return int(a.ID - b.ID) })
	return out, nil
}
