package levers

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Signal is a class of error a victim can see when a fault lands.
type Signal string

// Signals Classify recognizes.
const (
	SigReset      Signal = "ECONNRESET"
	SigRefused    Signal = "ECONNREFUSED"
	SigEOF        Signal = "EOF"
	SigBrokenPipe Signal = "EPIPE"
	SigTimeout    Signal = "timeout"
	SigTooMany    Signal = "SQLSTATE 53300"    // too_many_connections
	SigAdminStop  Signal = "SQLSTATE 57P01"    // admin_shutdown: backend terminated
	SigConnClosed Signal = "connection closed" // pgx: the connection was closed under the query
)

// Classify names the fault signal an error carries, or "" when it carries
// none (a constraint violation, a syntax error: the application's own).
// It looks through wrapping, pgx's connect and query errors, and net.OpError.
func Classify(err error) Signal {
	if err == nil {
		return ""
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "53300":
			return SigTooMany
		case "57P01", "57P02", "57P03":
			return SigAdminStop
		}
		return ""
	}
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return SigReset
	case errors.Is(err, syscall.ECONNREFUSED):
		return SigRefused
	case errors.Is(err, syscall.EPIPE):
		return SigBrokenPipe
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return SigEOF
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), pgconn.Timeout(err):
		return SigTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return SigTimeout
	}
	return classifyText(err.Error())
}

// classifyText names the signal of an error pgx reports only by text.
func classifyText(msg string) Signal {
	switch {
	case strings.Contains(msg, "connection reset by peer"):
		return SigReset
	case strings.Contains(msg, "connection refused"):
		return SigRefused
	case strings.Contains(msg, "unexpected EOF"), strings.HasSuffix(msg, ": EOF"):
		return SigEOF
	case strings.Contains(msg, "conn closed"), strings.Contains(msg, "closed network connection"):
		return SigConnClosed
	case strings.Contains(msg, "too many connections"):
		return SigTooMany
	case strings.Contains(msg, "timeout") || strings.Contains(msg, "deadline exceeded"):
		return SigTimeout
	}
	return ""
}
