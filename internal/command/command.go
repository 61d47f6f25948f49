// Package command implements the project's commands (fault-preflight,
// validate, program-gate, contested, arbitrate, cluster-tests, images,
// sweep): each is one function that a Mage target calls, writing
// human-readable progress to an io.Writer and returning an error that
// ExitCode maps to the process exit code.
package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/contested/contested/cluster"
	"github.com/contested/contested/faultlayer"
	"github.com/contested/contested/registry"
)

// Exit codes (a contract: DESIGN §4.1).
const (
	ExitGreen     = 0 // green
	ExitRed       = 1 // red, or refused
	ExitUsage     = 2 // usage or bad input
	ExitCannotRun = 3 // the fault layer is unhealthy
)

// Sentinel errors of the commands themselves.
var (
	// ErrUsage: bad arguments or input (exit 2).
	ErrUsage = errors.New("usage")
	// ErrCannotRun: the fault layer failed preflight (exit 3).
	ErrCannotRun = errors.New("cannot run")
	// ErrRed: the command ran and the answer is no (exit 1).
	ErrRed = errors.New("red")
)

// ExitCode maps an error from a command to its exit code.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitGreen
	case errors.Is(err, ErrUsage), errors.Is(err, faultlayer.ErrConfig), errors.Is(err, registry.ErrInvalid), errors.Is(err, cluster.ErrUsage):
		return ExitUsage
	case errors.Is(err, ErrCannotRun), errors.Is(err, faultlayer.ErrCannotRun), errors.Is(err, cluster.ErrCannotRun):
		return ExitCannotRun
	default:
		return ExitRed
	}
}

// NotBuilt answers for a target whose command does not exist yet: a usage
// error, never a green.
func NotBuilt(target string) error {
	return fmt.Errorf("%w: mage %s is not built yet in this version of contested", ErrUsage, target)
}

// withSignals cancels ctx on SIGTERM as well as the SIGINT Mage handles, so
// a CI runner stopping the job gets the same teardown as Ctrl-C.
func withSignals(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
