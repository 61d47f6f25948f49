// Package hostevents watches the Docker engine's events for one run's
// labelled containers while the run goes on, so that a failure another
// run on the same Docker host caused (its sweep removed a container of
// this run) is recognised from its evidence, and named as interference
// instead of being read as load.
//
// The engine says a container was destroyed, not by whom: a sweep
// journals every container of another run it removes (reap.Removals),
// and a destroy event is interference when that journal names a sweep of
// another run (or of none) for it. A container this run removed itself
// is never in the journal.
package hostevents

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/reap"
)

// Interference is one container of this run another run's sweep removed.
type Interference struct {
	At        time.Time
	Container string
	// By says who removed it: "run R's sweep (owner O)", or "a sweep
	// outside any run (owner O)".
	By string
}

// Say is the interference in words.
func (i Interference) Say() string {
	return fmt.Sprintf("container %s of this run was removed at %s by %s while this run was still going", i.Container, i.At.UTC().Format(time.TimeOnly), i.By)
}

// Eventer is the part of the Docker API the watch uses.
type Eventer interface {
	Events(ctx context.Context, options client.EventsListOptions) client.EventsResult
}

// Watch follows the engine's events for one run until Stop.
type Watch struct {
	run    string
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	gone   []Destroyed
}

// Destroyed is one destroy event of a container of the run.
type Destroyed struct {
	At        time.Time
	Container string
}

// Follow starts watching the destroy events of run's labelled containers.
// A nil d (no engine answered) gives a watch that sees nothing.
func Follow(ctx context.Context, d Eventer, run string) *Watch {
	ctx, cancel := context.WithCancel(ctx)
	w := &Watch{run: run, cancel: cancel, done: make(chan struct{})}
	if d == nil || run == "" {
		close(w.done)
		return w
	}
	f := client.Filters{}.Add("type", "container").Add("event", "destroy").Add("label", reap.LabelRun+"="+run)
	res := d.Events(ctx, client.EventsListOptions{Filters: f})
	go func() {
		defer close(w.done)
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-res.Err:
				_ = err // the stream ended: the engine went away; what was seen stays
				return
			case m, ok := <-res.Messages:
				if !ok {
					return
				}
				w.add(m)
			}
		}
	}()
	return w
}

func (w *Watch) add(m events.Message) {
	if m.Action != events.ActionDestroy || m.Actor.Attributes[reap.LabelRun] != w.run {
		return
	}
	at := time.Unix(0, m.TimeNano)
	if m.TimeNano == 0 {
		at = time.Unix(m.Time, 0)
	}
	w.mu.Lock()
	w.gone = append(w.gone, Destroyed{At: at, Container: strings.TrimPrefix(m.Actor.Attributes["name"], "/")})
	w.mu.Unlock()
}

// Stop ends the watch and returns the interference it saw: each destroy
// of this run's containers that a sweep of another run journalled.
func (w *Watch) Stop() []Interference {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return Match(w.run, w.gone, reap.Removals(w.run))
}

// Match pairs destroy events of run's containers with the removals the
// sweeps journalled: a destroy no sweep of another run journalled is this
// run's own doing.
func Match(run string, gone []Destroyed, removals []reap.Removal) []Interference {
	var out []Interference
	for _, g := range gone {
		for _, r := range removals {
			if r.Run != run || r.SweeperRun == run || (r.Container != g.Container && g.Container != "") {
				continue
			}
			if d := r.At.Sub(g.At); d > time.Minute || d < -time.Minute {
				continue
			}
			by := "a sweep outside any run"
			if r.SweeperRun != "" {
				by = "run " + r.SweeperRun + "'s sweep"
			}
			i := Interference{At: g.At, Container: r.Container, By: by + " (owner " + r.Sweeper + ")"}
			if !slices.Contains(out, i) {
				out = append(out, i)
			}
			break
		}
	}
	return out
}
