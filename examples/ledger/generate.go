package ledger

import (
	"fmt"
	"math/rand/v2"
)

// Generate returns n transfers between the given accounts with amounts from 1 to maxAmount,
// a pure function of seed: separate processes (and a replayed test) given the same seed
// produce the same transfers. Ids are prefix-000000 onwards, so runs with different
// prefixes never share an id.
func Generate(seed uint64, n int, accounts []string, maxAmount int64, prefix string) []Transfer {
	if len(accounts) < 2 || maxAmount < 1 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))
	out := make([]Transfer, n)
	for i := range out {
		from := r.IntN(len(accounts))
		to := r.IntN(len(accounts) - 1)
		if to >= from {
			to++
		}
		out[i] = Transfer{
			ID:     fmt.Sprintf("%s-%06d", prefix, i),
			From:   accounts[from],
			To:     accounts[to],
			Amount: 1 + r.Int64N(maxAmount),
		}
	}
	return out
}
