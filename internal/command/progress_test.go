package command

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/contested/contested/internal/battery"
)

// TestWalksBesideEachOtherAreNumberedInTheOrderTheyPrint: walks confirmed
// at once start in any order; their opening lines still read [1/n],
// [2/n], … top to bottom, each test once.
func TestWalksBesideEachOtherAreNumberedInTheOrderTheyPrint(t *testing.T) {
	const n = 5
	var out bytes.Buffer
	p := &progress{w: &lockedWriter{w: &out}, total: n}
	// The walks start last first: each waits for the one after it.
	next := make([]chan struct{}, n+1)
	for i := range next {
		next[i] = make(chan struct{})
	}
	close(next[n])
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-next[i+1]
			p.start(battery.Test{Package: "example.com/m", Name: fmt.Sprintf("TestWalk%d", i)})
			close(next[i])
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), n, out.String())
	}
	for k, l := range lines {
		if want := fmt.Sprintf("ladder: [%d/%d] ", k+1, n); !strings.HasPrefix(l, want) {
			t.Errorf("line %d is %q, want it to open with %q", k+1, l, want)
		}
		if want := fmt.Sprintf("TestWalk%d", n-1-k); !strings.Contains(l, want) {
			t.Errorf("line %d is %q, want %s", k+1, l, want)
		}
	}
}
