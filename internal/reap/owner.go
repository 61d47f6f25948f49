// Package reap gives every resource the project creates an owner label and
// removes resources whose owner is gone, so that a run killed with SIGKILL is
// cleaned up by the next one without touching anything the project did not
// label.
package reap

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Labels the project puts on every container, network and volume it creates.
// The sweep selects on LabelManaged and never looks at anything without it.
const (
	LabelManaged = "dev.contested.managed" // always "true"
	LabelOwner   = "dev.contested.owner"   // Owner.String() of the creating process
	LabelRun     = "dev.contested.run"     // run id
	LabelRole    = "dev.contested.role"    // what it is: layer-postgres, layer-toxiproxy, cluster-replica, …
	LabelKeep    = "dev.contested.keep"    // "true" when the user asked to keep it up; still reaped by the next sweep
)

// Owner identifies a process across PID reuse: the host it runs on, its PID
// and its start time in clock ticks since boot (field 22 of /proc/PID/stat).
type Owner struct {
	Host  string
	PID   int
	Start uint64
}

// Self returns the owner identity of the calling process.
func Self() Owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	start, _ := startTime(pid)
	return Owner{Host: host, PID: pid, Start: start}
}

// String renders the owner as host/pid/start, the form stored in labels and
// in the lease table.
func (o Owner) String() string {
	return fmt.Sprintf("%s/%d/%d", o.Host, o.PID, o.Start)
}

// ErrBadOwner reports an owner string that is not host/pid/start.
var ErrBadOwner = errors.New("malformed owner")

// ParseOwner parses the host/pid/start form written by String.
func ParseOwner(s string) (Owner, error) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return Owner{}, fmt.Errorf("parse owner %q: %w", s, ErrBadOwner)
	}
	j := strings.LastIndexByte(s[:i], '/')
	if j < 0 {
		return Owner{}, fmt.Errorf("parse owner %q: %w", s, ErrBadOwner)
	}
	pid, err1 := strconv.Atoi(s[j+1 : i])
	start, err2 := strconv.ParseUint(s[i+1:], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return Owner{}, fmt.Errorf("parse owner %q: %w", s, ErrBadOwner)
	}
	return Owner{Host: s[:j], PID: pid, Start: start}, nil
}

// Gone reports whether the owner has certainly exited: it ran on this host
// and its PID is no longer alive, or is alive but belongs to a later process.
// An owner on another host is never reported gone, because this process
// cannot see it; such resources are left alone.
func (o Owner) Gone() bool {
	host, _ := os.Hostname()
	if o.Host != host || o.PID <= 0 {
		return false
	}
	if err := syscall.Kill(o.PID, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	start, err := startTime(o.PID)
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	return o.Start != 0 && start != o.Start
}

// startTime reads a process's start time from /proc. The command name in
// field 2 may hold spaces and parentheses, so fields are counted from the
// last closing parenthesis.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat: no command field", pid)
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); start time is field 22.
	if len(fields) < 20 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// Labels returns the labels for a resource created by the calling process.
func Labels(run, role string) map[string]string {
	return map[string]string{
		LabelManaged: "true",
		LabelOwner:   Self().String(),
		LabelRun:     run,
		LabelRole:    role,
	}
}
