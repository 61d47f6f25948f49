package levers

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Signal
	}{
		{"nil", nil, ""},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), SigReset},
		{"refused", &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}, SigRefused},
		{"eof", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), SigEOF},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), SigBrokenPipe},
		{"deadline", fmt.Errorf("query: %w", os.ErrDeadlineExceeded), SigTimeout},
		{"too many connections", &pgconn.PgError{Code: "53300", Message: "too many connections for database"}, SigTooMany},
		{"backend terminated", &pgconn.PgError{Code: "57P01"}, SigAdminStop},
		{"a unique violation is the application's own", &pgconn.PgError{Code: "23505"}, ""},
		{"an unrelated error", errors.New("syntax error at or near"), ""},
		{"text only: reset", errors.New("failed to receive message: read tcp: connection reset by peer"), SigReset},
		{"text only: closed", errors.New("conn closed"), SigConnClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
