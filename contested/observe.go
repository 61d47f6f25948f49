package contested

import "net"

// observedConn reports socket errors of a victim connection to its leg,
// and, while a fault that strikes some clients only is armed, the bytes
// its client read: the spared clients' work.
type observedConn struct {
	net.Conn
	leg    *Leg
	client int // anyClient for a connection of the shared pool
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
	return n, err
}

func (c *observedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		c.leg.observe(err, "write", c.client)
	}
	return n, err
}
