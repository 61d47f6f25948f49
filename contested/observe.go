package contested

import (
	"net"
	"sync/atomic"
	"time"
)

// observedConn reports socket errors of a victim connection to its leg,
// and, while a fault that strikes some clients only is armed, the bytes
// its client read: the spared clients' work. While a fault that slows the
// victim down is armed (levers.Slowing) it times each round trip, from a
// write to the first read after it that carried bytes: the victim side of
// a fault no error proves.
type observedConn struct {
	net.Conn
	leg    *Leg
	client int          // anyClient for a connection of the shared pool
	wrote  atomic.Int64 // when the last write not yet answered ended (UnixNano), 0 when none
}

var _ net.Conn = (*observedConn)(nil)

func (c *observedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.leg.observe(err, "read", c.client)
	}
	if n > 0 && c.leg.scoped.Load() {
		c.leg.worked(c.client, n, false)
	}
	if n > 0 {
		if w := c.wrote.Swap(0); w != 0 && c.leg.slowing.Load() {
			c.leg.roundTrip(c.client, time.Unix(0, w), time.Now())
		}
	}
	return n, err
}

func (c *observedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		c.leg.observe(err, "write", c.client)
	}
	if n > 0 {
		c.wrote.Store(time.Now().UnixNano())
	}
	return n, err
}
