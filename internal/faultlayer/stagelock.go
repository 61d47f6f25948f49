package faultlayer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/contested/contested/internal/flock"
)

// The degraded-UX stage (go tool mage degraded) reroutes a web front
// through standing proxies of the layer it runs on and degrades them for
// minutes. It holds the stage lock end to end, so that whatever would tear
// that layer down or run a battery against it (layer down, layer up's
// recreation, validate) waits for the stage to finish instead of pulling
// the stack from under it. The kernel drops the lock when the holder dies,
// so a killed stage never wedges the next command.

// StageLockPath is the stage lock: degraded-stage.lock beside the warm
// layer's record, in the user's cache directory.
func StageLockPath() (string, error) {
	path, err := WarmRecordPath()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(path), "degraded-stage.lock"), nil
}

// stageLockNotice is how long HoldStage tries before it says it waits.
const stageLockNotice = 200 * time.Millisecond

// HoldStage takes the stage lock, waiting while another process holds it
// (saying so on w once) until ctx ends, and returns the function that
// releases it. who names the caller in that message.
func HoldStage(ctx context.Context, who string, w io.Writer) (unlock func(), err error) {
	path, err := StageLockPath()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("hold the degraded stage's lock: %w", err)
	}
	quick, cancel := context.WithTimeout(ctx, stageLockNotice)
	unlock, err = flock.Lock(quick, path, 0o600, 25*time.Millisecond)
	cancel()
	if err == nil {
		return unlock, nil
	}
	if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return nil, fmt.Errorf("hold the degraded stage's lock %s: %w", path, err)
	}
	if w != nil {
		fmt.Fprintf(w, "%s: a degraded stage (go tool mage degraded) is running on the fault layer; waiting for it to finish (lock %s)\n", who, path)
	}
	unlock, err = flock.Lock(ctx, path, 0o600, 100*time.Millisecond)
	if err != nil {
		return nil, fmt.Errorf("wait for the degraded stage's lock %s: %w", path, err)
	}
	return unlock, nil
}
