package faultrecord_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/contested/contested/faultrecord"
)

// A leg writes one record per armed fault, after observing whether it fired. In a real test
// NewRecorder needs no options: it takes CONTESTED_RUN_ID and CONTESTED_RESULTS_DIR (or the
// module root's test-results) from the environment.
func ExampleRecorder_Write() {
	root, _ := os.MkdirTemp("", "faultrecord-example")
	defer os.RemoveAll(root)

	rec, err := faultrecord.NewRecorder("example.com/ledger/store",
		faultrecord.WithResultsDir(root), faultrecord.WithRunID("20261129T101500Z-4f2a"))
	if err != nil {
		fmt.Println(err)
		return
	}
	armedAt := time.Now()
	path, err := rec.Write(faultrecord.Record{
		Test:    "TestStoreContract/reset",
		Surface: "ledger.store",
		Class:   "store",
		Leg:     "reset",
		Seed:    42,
		Replay:  "CONTESTED_SEED=42 go test ./store -run '^TestStoreContract$/^reset$' -count=1",
		Armed:   true,
		ArmedAt: armedAt,
		Fired:   true, // only because the victim saw it, never because the toxic was added
		FiredAt: armedAt.Add(80 * time.Millisecond),
		Evidence: faultrecord.Evidence{
			Injector: "proxy ledger-store-31002 reset_peer; 2 conns reset",
			Victim:   "pgconn: ECONNRESET x2",
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _ := os.ReadFile(path)
	back, err := faultrecord.ParseRecord(data)
	fmt.Println(filepath.Base(filepath.Dir(path)), back.Schema, back.RunID, back.Package, back.Leg, back.Fired, err)
	// Output: fault contested/faultrecord@1 20261129T101500Z-4f2a example.com/ledger/store reset true <nil>
}

// The paired run: purge and stamp, run the battery, verify. A battery whose only fault never
// fired is refused, and everything stays on disk for triage.
func ExampleVerify() {
	root, _ := os.MkdirTemp("", "faultrecord-example")
	defer os.RemoveAll(root)
	dir := faultrecord.FaultDir(root)

	_ = faultrecord.Purge(dir)
	_ = faultrecord.WriteStamp(dir, "20261129T101500Z-4f2a")
	past := time.Now().Add(-time.Second) // keep the example independent of mtime resolution
	_ = os.Chtimes(filepath.Join(dir, faultrecord.StampName), past, past)

	// The battery: one leg armed a fault the code path never reached.
	rec, _ := faultrecord.NewRecorder("example.com/ledger/pool", faultrecord.WithResultsDir(root), faultrecord.WithRunID("20261129T101500Z-4f2a"))
	_, _ = rec.Write(faultrecord.Record{Test: "TestPoolContract/exhaust", Surface: "ledger.pool", Class: "pool",
		Leg: "pool-exhaustion", Seed: 7, Armed: true, ArmedAt: time.Now()})

	rep, err := faultrecord.Verify(context.Background(), faultrecord.Options{
		Dir:              dir,
		Mode:             faultrecord.Paired,
		RecordingClasses: []string{"pool"},
	})
	fmt.Println("refused:", errors.Is(err, faultrecord.ErrRefused))
	for _, p := range rep.Phases {
		fmt.Println(p.Number, p.Name, p.OK)
	}
	_, stampErr := os.Stat(filepath.Join(dir, faultrecord.StampName))
	fmt.Println("stamp kept:", stampErr == nil)
	// Output:
	// refused: true
	// 1 records belong to this run true
	// 2 every record file was read true
	// 3 every armed fault fired false
	// 4 faults executed at all false
	// 5 every recording class fired false
	// 6 self-tests exist in the test inventory true
	// stamp kept: true
}

// The summary for a terminal: colour follows NO_COLOR and whether stdout is a terminal.
func ExampleReport_WriteSummary() {
	root, _ := os.MkdirTemp("", "faultrecord-example")
	defer os.RemoveAll(root)
	rep, _ := faultrecord.Verify(context.Background(), faultrecord.Options{
		Dir:  faultrecord.FaultDir(root),
		Mode: faultrecord.Standalone,
	})
	_ = rep.WriteSummary(os.Stdout, faultrecord.WithColor(false))
	// Output is not checked: the summary names the temporary directory.
}
