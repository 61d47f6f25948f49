package gate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gate"
)

// The paired run: purge and stamp, run the battery, verify. A battery whose only fault never
// fired is refused, and everything stays on disk for triage.
func ExampleVerify() {
	root, _ := os.MkdirTemp("", "gate-example")
	defer os.RemoveAll(root)
	dir := faultdir.Of(root)

	_ = gate.Purge(dir)
	_ = gate.WriteStamp(dir, "20261129T101500Z-4f2a")
	past := time.Now().Add(-time.Second) // keep the example independent of mtime resolution
	_ = os.Chtimes(filepath.Join(dir, faultdir.StampName), past, past)

	// The battery: one leg armed a fault the code path never reached.
	rec, _ := faultrecord.NewRecorder("example.com/ledger/pool", faultrecord.WithResultsDir(root), faultrecord.WithRunID("20261129T101500Z-4f2a"))
	_, _ = rec.Write(faultrecord.Record{Test: "TestPoolContract/exhaust", Surface: "ledger.pool", Class: "pool",
		Leg: "pool-exhaustion", Seed: 7, Armed: true, ArmedAt: time.Now()})

	rep, err := gate.Verify(context.Background(), gate.Options{
		Dir:              dir,
		Mode:             gate.Paired,
		RecordingClasses: []string{"pool"},
	})
	fmt.Println("refused:", errors.Is(err, gate.ErrRefused))
	for _, p := range rep.Phases {
		fmt.Println(p.Number, p.Name, p.OK)
	}
	_, stampErr := os.Stat(filepath.Join(dir, faultdir.StampName))
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
	root, _ := os.MkdirTemp("", "gate-example")
	defer os.RemoveAll(root)
	rep, _ := gate.Verify(context.Background(), gate.Options{
		Dir:  faultdir.Of(root),
		Mode: gate.Standalone,
	})
	_ = rep.WriteSummary(os.Stdout, gate.WithColor(false))
	// Output is not checked: the summary names the temporary directory.
}
