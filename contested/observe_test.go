package contested

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"
)

// slowing is the fault of a lever whose victim side is a slow round trip
// (levers.Slowing): a round trip of at least least landed.
type slowing struct{ least time.Duration }

func (slowing) Injector() (bool, string)   { return true, "in place" }
func (slowing) Heal(context.Context) error { return nil }
func (s slowing) Slowed(took time.Duration) (bool, string) {
	return took >= s.least, fmt.Sprintf("a round trip of at least %v", s.least)
}

// quiet is a fault whose victim side is not time: a leg never asks it
// about round trips.
type quiet struct{}

func (quiet) Injector() (bool, string)   { return true, "in place" }
func (quiet) Heal(context.Context) error { return nil }

// TestARoundTripProvesAFaultThatSlows: while a fault that slows the victim
// down is armed, a connection's round trip (its write, the first answer
// after it) that took at least what the fault asks is victim-side
// evidence; a quick one, one whose write left before the arm, one under a
// fault that does not slow, or a spared client's is not. The connection is
// one end of a pipe whose other end answers after a delay: the timing
// under test is the leg's, the fault layer's own is proven by the levers
// that slow.
func TestARoundTripProvesAFaultThatSlows(t *testing.T) {
	const least = 40 * time.Millisecond
	tests := []struct {
		name        string
		armed       any // the armed fault
		delay       time.Duration
		armedLater  bool // the fault was armed after the write left
		struck      []int
		wantLanded  bool
		wantVictims string
	}{
		{name: "a slow answer lands", armed: slowing{least}, delay: 60 * time.Millisecond, wantLanded: true, wantVictims: "a round trip of at least 40ms"},
		{name: "a quick answer does not", armed: slowing{least}},
		{name: "a write before the arm does not count", armed: slowing{least}, delay: 60 * time.Millisecond, armedLater: true},
		{name: "a fault that does not slow is not asked", armed: quiet{}, delay: 60 * time.Millisecond},
		{name: "a struck client's slow answer lands", armed: slowing{least}, delay: 60 * time.Millisecond, struck: []int{0}, wantLanded: true, wantVictims: "client 0: a round trip of at least 40ms"},
		{name: "a spared client's does not", armed: slowing{least}, delay: 60 * time.Millisecond, struck: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &Leg{}
			f := &fault{armedAt: time.Now()}
			if tt.struck != nil {
				f.struck, f.spared = tt.struck, map[int]*work{}
			}
			client, server := net.Pipe()
			defer client.Close()
			defer server.Close()
			go func() {
				buf := make([]byte, 16)
				if _, err := server.Read(buf); err != nil {
					return
				}
				time.Sleep(tt.delay)
				server.Write([]byte("answer"))
			}()
			c := &observedConn{Conn: client, leg: l, client: 0}
			if _, err := c.Write([]byte("request")); err != nil {
				t.Fatal(err)
			}
			if tt.armedLater {
				time.Sleep(time.Millisecond)
				f.armedAt = time.Now()
			}
			switch armed := tt.armed.(type) {
			case slowing:
				f.armed = armed
				l.slowing.Store(true)
			case quiet:
				f.armed = armed
			}
			l.current = f
			if _, err := c.Read(make([]byte, 16)); err != nil {
				t.Fatal(err)
			}
			if f.Landed() != tt.wantLanded || f.VictimText() != tt.wantVictims {
				t.Errorf("landed %v, victim %q; want %v, %q", f.Landed(), f.VictimText(), tt.wantLanded, tt.wantVictims)
			}
		})
	}
}
