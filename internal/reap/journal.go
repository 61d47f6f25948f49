package reap

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contested/contested/internal/envvar"
)

// Removal is one container a sweep removed, as its journal keeps it: the
// run the container belonged to reads it (hostevents) to tell a container
// another run's sweep took from one it removed itself.
type Removal struct {
	At        time.Time `json:"at"`
	Container string    `json:"container"`
	Run       string    `json:"run"`   // the container's run
	Owner     string    `json:"owner"` // the container's owner label
	// SweeperRun and Sweeper are the sweeping process's run id
	// (CONTESTED_RUN_ID, empty for a sweep outside any run) and owner.
	SweeperRun string `json:"sweeper_run,omitempty"`
	Sweeper    string `json:"sweeper"`
}

// JournalDir is where sweeps journal what they removed on this host, one
// file per run whose containers were removed. A variable so tests can
// keep their journal apart.
var JournalDir = filepath.Join(os.TempDir(), "contested-sweeps")

// maxJournal bounds a run's journal: a sweep that removes more than this
// has said enough.
const maxJournal = 1 << 20

// journal appends r to the journal of r.Run, best effort: a journal that
// cannot be written costs only the attribution of an interference.
func journal(r Removal) {
	if r.Run == "" || r.Run == r.SweeperRun {
		return
	}
	if err := os.MkdirAll(JournalDir, 0o777); err != nil {
		return
	}
	path := filepath.Join(JournalDir, journalName(r.Run))
	if fi, err := os.Lstat(path); err == nil && (!fi.Mode().IsRegular() || fi.Size() > maxJournal) {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o666)
	if err != nil {
		return
	}
	defer f.Close()
	b, _ := json.Marshal(r)
	f.Write(append(b, '\n'))
}

// Removals are the journalled removals of run's containers by sweeps of
// other runs, oldest first.
func Removals(run string) []Removal {
	f, err := os.Open(filepath.Join(JournalDir, journalName(run)))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []Removal
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Removal
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Run == run {
			out = append(out, r)
		}
	}
	return out
}

// journalName is a run id as a file name.
func journalName(run string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, run) + ".jsonl"
}

// sweeperRun is the run the sweeping process belongs to.
func sweeperRun() string { return os.Getenv(envvar.RunID) }
