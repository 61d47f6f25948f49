package interrupt

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

var brokenPipeOnce sync.Once

// SurviveBrokenPipe keeps this process alive when its standard output or
// error is a pipe nobody reads any more: `go tool mage validate | tee log`,
// then Ctrl-C, and the terminal's SIGINT kills tee too. By default a Go
// program that writes to a broken pipe on fd 1 or 2 dies of SIGPIPE on the
// spot (os/signal, "SIGPIPE"), so a command that owns containers, proxies
// or a lease would never tear them down, nor write its evidence files.
//
// Once SIGPIPE is asked for with signal.Notify, the fd no longer matters:
// the signal goes to the channel (nobody reads it; a full channel drops
// it) and the write returns EPIPE, which the writers here ignore. Notify,
// not signal.Ignore: an ignored disposition is inherited across exec, and
// the processes this one starts (a shell, a container CLI) would lose
// their own default of stopping when their reader is gone. Every process
// that owns resources calls it first: Context does, and so do the
// supervisor, its worker and a test binary that owns a shared layer.
func SurviveBrokenPipe() {
	brokenPipeOnce.Do(func() {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	})
}
