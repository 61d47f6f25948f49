package contested

import "net"

// observedConn reports socket errors of a victim connection to its leg.
type observedConn struct {
	net.Conn
	leg *Leg
}

var _ net.Conn = (*observedConn)(nil)

func (c *observedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.leg.observe(err, "read")
	}
	return n, err
}

func (c *observedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		c.leg.observe(err, "write")
	}
	return n, err
}
