package ledger

import (
	"fmt"
	"math/rand/v2"
)

// Mix is the shape of a generated workload. It is built to reach the edges of the ledger's
// rules rather than to look like average traffic:
//
//   - hot accounts: both ends of a transfer are drawn from a Zipf distribution over the
//     accounts (s = 1.1), so the first two accounts take part in most transfers, and
//     concurrent clients and consumers keep contending for the same rows;
//   - insufficient funds: amounts go up to MaxAmount, so with opening balances of a few
//     MaxAmounts a good share of the transfers is rejected, and which ones depends on the
//     order they are applied in;
//   - the exact balance: amounts are multiples of MaxAmount/10, so balances stay on that grid
//     and a transfer often asks for exactly what its source holds; and when Opening is set,
//     one transfer in ten asks for exactly the balance its source would hold if the transfers
//     before it were applied in order (a drain).
type Mix struct {
	// Accounts are the accounts transfers move money between, hottest first.
	Accounts []string
	// MaxAmount is the largest amount of an ordinary transfer (a drain may ask for more).
	MaxAmount int64
	// Opening is every account's opening balance; 0 turns drains off.
	Opening int64
}

// Source generates a Mix's transfers one at a time, as a pure function of its seed.
type Source struct {
	mix     Mix
	prefix  string
	r       *rand.Rand
	zipf    *rand.Zipf
	unit    int64
	balance []int64 // the sources' balances if every transfer so far were applied in order
	n       int
}

// Source returns the generator of m's transfers for seed. Ids are prefix-000000 onwards, so
// sources with different prefixes never share an id. It returns nil when m cannot generate a
// transfer (fewer than two accounts, or MaxAmount below 1).
func (m Mix) Source(seed uint64, prefix string) *Source {
	if len(m.Accounts) < 2 || m.MaxAmount < 1 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))
	s := &Source{mix: m, prefix: prefix, r: r, zipf: rand.NewZipf(r, 1.1, 1, uint64(len(m.Accounts)-1)),
		unit: max(1, m.MaxAmount/10), balance: make([]int64, len(m.Accounts))}
	for i := range s.balance {
		s.balance[i] = m.Opening
	}
	return s
}

// Next returns the next transfer.
func (s *Source) Next() Transfer {
	from := int(s.zipf.Uint64())
	to := from
	for to == from {
		to = int(s.zipf.Uint64())
	}
	amount := s.unit * (1 + s.r.Int64N(max(1, s.mix.MaxAmount/s.unit)))
	if drain := s.r.IntN(10) == 0; drain && s.mix.Opening > 0 && s.balance[from] > 0 {
		amount = s.balance[from]
	}
	if s.balance[from] >= amount {
		s.balance[from] -= amount
		s.balance[to] += amount
	}
	t := Transfer{ID: fmt.Sprintf("%s-%06d", s.prefix, s.n), From: s.mix.Accounts[from], To: s.mix.Accounts[to], Amount: amount}
	s.n++
	return t
}

// Account returns an account drawn the way a transfer's ends are: the hot ones most often.
func (s *Source) Account() string { return s.mix.Accounts[s.zipf.Uint64()] }

// Generate returns n transfers of the mix (see Source).
func (m Mix) Generate(seed uint64, n int, prefix string) []Transfer {
	s := m.Source(seed, prefix)
	if s == nil {
		return nil
	}
	out := make([]Transfer, n)
	for i := range out {
		out[i] = s.Next()
	}
	return out
}

// Generate returns n transfers between the given accounts with amounts up to maxAmount (a
// Mix without drains, so hot accounts first), a pure function of seed: separate processes
// (and a replayed test) given the same seed produce the same transfers. Ids are
// prefix-000000 onwards, so runs with different prefixes never share an id.
func Generate(seed uint64, n int, accounts []string, maxAmount int64, prefix string) []Transfer {
	return Mix{Accounts: accounts, MaxAmount: maxAmount}.Generate(seed, n, prefix)
}
