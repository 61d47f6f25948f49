package history

import (
	"encoding/json"
	"testing"
	"time"
)

// simCase is one simulated workload.
type simCase struct {
	name      string
	seed      uint64
	n, procs  int
	ambiguity float64
	build     func(seed uint64, n, procs int, ambiguity float64) (Model, []Op)
}

func accountsSim(accounts int, transfers bool) func(uint64, int, int, float64) (Model, []Op) {
	return func(seed uint64, n, procs int, ambiguity float64) (Model, []Op) {
		return simulateAccounts(seed, n, procs, accounts, ambiguity, transfers)
	}
}

func leaseSim(ports int) func(uint64, int, int, float64) (Model, []Op) {
	return func(seed uint64, n, procs int, ambiguity float64) (Model, []Op) {
		return simulateLease(seed, n, procs, ports, ambiguity)
	}
}

var simCases = []simCase{
	{"accounts, reads and writes, partitioned", 1, 2000, 8, 0.02, accountsSim(8, false)},
	{"accounts with transfers, one partition", 2, 2000, 8, 0.01, accountsSim(8, true)},
	{"accounts with transfers, 4 clients", 3, 1000, 4, 0.02, accountsSim(4, true)},
	{"lease, more ports than clients", 4, 2000, 6, 0.01, leaseSim(8)},
	{"lease, contended: none-free and takeovers", 5, 1000, 8, 0.01, leaseSim(3)},
	{"lease without ambiguity, partitioned by port", 6, 2000, 6, 0, leaseSim(8)},
}

// TestSimulatedCorrectServicesAreOk checks histories of a correct service: every one must be
// Ok and green. The budget is generous so a checker regression shows as Unknown, not a hang.
func TestSimulatedCorrectServicesAreOk(t *testing.T) {
	for _, tc := range simCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, ops := tc.build(tc.seed, tc.n, tc.procs, tc.ambiguity)
			if err := Validate(ops); err != nil {
				t.Fatalf("the simulation made an invalid history: %v", err)
			}
			res, err := Check(t.Context(), m, ops, Options{Timeout: generous, Expected: tc.n})
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if !res.Green() {
				t.Fatalf("a correct service is not green: %s", res)
			}
			t.Log(res)
		})
	}
}

// plantRead makes a late read return a balance no interleaving can produce.
func plantRead(t *testing.T, ops []Op) {
	for i := len(ops) * 3 / 4; i < len(ops); i++ {
		if ops[i].Type == TypeRead && !ops[i].Timeout && ops[i].Error == "" {
			ops[i].Output = raw(int64(1_000_000_000))
			return
		}
	}
	t.Fatal("no read to plant in")
}

// plantEpoch makes a late acquire hand out the epoch its port was last acquired with.
func plantEpoch(t *testing.T, ops []Op) {
	last := map[int]int64{}
	for i := range ops {
		var a Acquired
		if ops[i].Type != TypeAcquire || ops[i].Timeout || json.Unmarshal(ops[i].Output, &a) != nil || a.Port == 0 {
			continue
		}
		if prev, ok := last[a.Port]; ok && i > len(ops)/2 {
			a.Epoch = prev
			ops[i].Output = raw(a)
			return
		}
		last[a.Port] = a.Epoch
	}
	t.Fatal("no acquire to plant in")
}

// TestOneWrongAnswerMakesASimulatedHistoryIllegal plants a single wrong answer deep in a
// long legal history; the checker must find it. Proving a history illegal means ruling out
// every order, and every op with an unknown outcome can be placed anywhere after its invoke,
// so the cost grows steeply with the number of ambiguous ops: these cases keep that number
// realistic for one fault leg.
func TestOneWrongAnswerMakesASimulatedHistoryIllegal(t *testing.T) {
	tests := []struct {
		name  string
		sim   simCase
		plant func(t *testing.T, ops []Op)
	}{
		{"accounts, 2000 ops, none ambiguous", simCase{seed: 2, n: 2000, procs: 8, build: accountsSim(8, true)}, plantRead},
		{"accounts, 600 ops, 1% ambiguous", simCase{seed: 2, n: 600, procs: 8, ambiguity: 0.01, build: accountsSim(8, true)}, plantRead},
		{"lease, 2000 ops, none ambiguous", simCase{seed: 4, n: 2000, procs: 6, build: leaseSim(8)}, plantEpoch},
		{"lease, 300 ops, 2% ambiguous", simCase{seed: 4, n: 300, procs: 6, ambiguity: 0.02, build: leaseSim(8)}, plantEpoch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, ops := tt.sim.build(tt.sim.seed, tt.sim.n, tt.sim.procs, tt.sim.ambiguity)
			tt.plant(t, ops)
			res, err := Check(t.Context(), m, ops, Options{Timeout: generous})
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if res.Verdict != Illegal {
				t.Fatalf("verdict %s, want Illegal (%s)", res.Verdict, res)
			}
			t.Log(res)
		})
	}
}

func benchmarkCheck(b *testing.B, m Model, ops []Op) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		res, err := Check(b.Context(), m, ops, Options{Timeout: 10 * time.Minute})
		if err != nil || !res.Green() {
			b.Fatalf("Check: %v, %s", err, res)
		}
	}
	b.ReportMetric(float64(len(ops))*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// benchmarkScaling checks the large history in the timed loop and the small one, interleaved,
// with the timer stopped, and reports how many times longer the large one takes. Measuring
// both in one run keeps machine noise out of the ratio.
func benchmarkScaling(b *testing.B, small, large func() (Model, []Op)) {
	b.Helper()
	ms, opsS := small()
	ml, opsL := large()
	check := func(m Model, ops []Op) {
		res, err := Check(b.Context(), m, ops, Options{Timeout: 10 * time.Minute})
		if err != nil || !res.Green() {
			b.Fatalf("Check: %v, %s", err, res)
		}
	}
	var tSmall, tLarge time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		check(ml, opsL)
		tLarge += time.Since(start)
		b.StopTimer()
		start = time.Now()
		check(ms, opsS)
		tSmall += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(len(opsL))*float64(b.N)/tLarge.Seconds(), "ops/s")
	b.ReportMetric(tLarge.Seconds()/tSmall.Seconds(), "x-time-of-small")
	b.ReportMetric(float64(tSmall.Nanoseconds())/float64(b.N), "ns/small-check")
}

func accountsBench(n int) func() (Model, []Op) {
	return func() (Model, []Op) { return simulateAccounts(42, n, 8, 8, 0.005, true) }
}

func leaseBench(n int) func() (Model, []Op) {
	return func() (Model, []Op) { return simulateLease(42, n, 6, 8, 0.005) }
}

// BenchmarkCheckAccounts2k: 2,000 ops, 8 clients, 8 accounts, transfers (one partition),
// 0.5% ambiguous.
func BenchmarkCheckAccounts2k(b *testing.B) {
	m, ops := accountsBench(2000)()
	benchmarkCheck(b, m, ops)
}

// BenchmarkCheckAccounts8k is the same workload at 8,000 ops; x-time-of-small is its time
// over the 2k history's, measured interleaved in the same run (4 means linear).
func BenchmarkCheckAccounts8k(b *testing.B) {
	benchmarkScaling(b, accountsBench(2000), accountsBench(8000))
}

// BenchmarkCheckAccountsPartitioned8k: 8,000 reads, writes and deposits, no transfers, so
// checked per account.
func BenchmarkCheckAccountsPartitioned8k(b *testing.B) {
	m, ops := simulateAccounts(42, 8000, 8, 8, 0.005, false)
	benchmarkCheck(b, m, ops)
}

// BenchmarkCheckLease2k: 2,000 lease ops, 6 clients, 8 ports, 0.5% ambiguous (so one
// partition whenever an acquire is ambiguous).
func BenchmarkCheckLease2k(b *testing.B) {
	m, ops := leaseBench(2000)()
	benchmarkCheck(b, m, ops)
}

// BenchmarkCheckLease8k is the same at 8,000 ops, with the ratio to 2k.
func BenchmarkCheckLease8k(b *testing.B) {
	benchmarkScaling(b, leaseBench(2000), leaseBench(8000))
}

// BenchmarkCheckAccounts8kVisualizeDir is Accounts8k with a visualization directory set, as
// an oracle that wants the HTML on failure would run it: porcupine then runs in verbose mode
// (keeps partial linearizations), which this measures. Nothing is written on Ok.
func BenchmarkCheckAccounts8kVisualizeDir(b *testing.B) {
	m, ops := accountsBench(8000)()
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		res, err := Check(b.Context(), m, ops, Options{Timeout: 10 * time.Minute, VisualizeDir: dir})
		if err != nil || !res.Green() || res.Visualization != "" {
			b.Fatalf("Check: %v, %s", err, res)
		}
	}
	b.ReportMetric(float64(len(ops))*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
