package faultrecord_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/contested/contested/faultrecord"
)

// A leg writes one record per armed fault, after observing whether it fired. In a real test
// the results directory and run id come from internal/runenv (CONTESTED_RESULTS_DIR or the
// module root's test-results, and CONTESTED_RUN_ID).
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
