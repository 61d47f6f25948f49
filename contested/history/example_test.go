package history_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/contested/contested/contested/history"
)

// A client moves money while a reset fault is armed; one transfer times out, so its outcome is
// unknown. Reads afterwards show it did land, which is one of the two legal outcomes.
func Example() {
	rec := history.NewRecorder(time.Now())

	id, _ := rec.Invoke("client-1", history.TypeRead, "alice", nil)
	_ = rec.Complete(id, 100, nil)

	epoch := rec.BeginFault("reset")
	id, _ = rec.Invoke("client-1", history.TypeTransfer, "alice", history.Transfer{From: "alice", To: "bob", Amount: 30})
	_ = rec.Ambiguous(id, errors.New("read tcp: connection reset by peer"))
	_ = rec.EndFault(epoch)

	id, _ = rec.Invoke("client-2", history.TypeRead, "alice", nil)
	_ = rec.Complete(id, 70, nil)
	id, _ = rec.Invoke("client-2", history.TypeRead, "bob", nil)
	_ = rec.Complete(id, 30, nil)

	model := history.NewAccounts(map[string]int64{"alice": 100})
	res, err := history.Check(context.Background(), model, rec.Ops(), history.Options{
		Timeout:  time.Minute,
		Expected: rec.Issued(),
		Faults:   rec.Faults(),
	})
	if err != nil {
		fmt.Println("cannot check:", err)
		return
	}
	fmt.Println(res.Verdict, "green:", res.Green())
	fmt.Printf("%d ops checked, %d ambiguous\n", res.OpsChecked, res.Ambiguous)
	// Output:
	// Ok green: true
	// 4 ops checked, 1 ambiguous
}
