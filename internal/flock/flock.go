// Package flock gives an exclusive, context-bounded lock on a file shared
// across processes.
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Lock takes an exclusive flock on path (created with perm if missing),
// trying again every poll until ctx ends, and returns the function that
// releases it. The kernel drops the lock when the process dies, so a killed
// holder never wedges the next one.
func Lock(ctx context.Context, path string, perm os.FileMode, poll time.Duration) (unlock func(), err error) {
	// A lock file may sit where another user can make the name first (the
	// shared temporary directory): never follow a link, never wait on a
	// FIFO, and lock nothing but a regular file.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("lock %s: a symbolic link (never followed); remove it", path)
		}
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("lock %s: not a regular file (%s); remove it", path, fi.Mode().Type())
		}
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}
