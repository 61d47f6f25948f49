// Package reap gives every resource the project creates an owner label and
// removes resources whose owner is provably gone, so that a run killed with
// SIGKILL is cleaned up by the next one without touching anything the
// project did not label, nor anything a live run elsewhere still uses.
package reap

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
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
	// LabelWarm marks a warm layer (go tool mage layer up): its value is
	// the path of the owner record that keeps it alive (WarmHeld).
	LabelWarm = "dev.contested.warm"
)

// Owner identifies a process so that another process can prove whether it
// is still alive. A PID means something only inside one PID namespace of one
// kernel boot, so the identity carries both:
//
//   - Host: the hostname (informative, and what tells "this machine
//     rebooted" from "another machine");
//   - Boot: the kernel's boot id (/proc/sys/kernel/random/boot_id), the
//     same in every container of one machine and new at every boot;
//   - PIDNS: the inode of the PID namespace (/proc/self/ns/pid);
//   - PID and Start: the process and its start time in clock ticks since
//     boot (field 22 of /proc/PID/stat), which tells a reused PID apart.
//
// An owner without Boot and PIDNS (written by an older contested, or where
// /proc does not say) can never be proven gone.
type Owner struct {
	Host  string
	Boot  string
	PIDNS uint64
	PID   int
	Start uint64
}

// Liveness is what this process can prove about an owner.
type Liveness int

// The three answers. Only Gone lets a sweep or a lease reclaim act.
const (
	// Unknown: this process cannot see the owner (another PID namespace,
	// another machine, an unreadable identity). Leave its resources alone.
	Unknown Liveness = iota
	// Alive: the owner process runs.
	Alive
	// Gone: the owner has certainly exited: same boot and PID namespace and
	// its PID is free or belongs to a later process, or the machine it ran
	// on (same hostname) has rebooted since.
	Gone
)

func (l Liveness) String() string {
	switch l {
	case Alive:
		return "alive"
	case Gone:
		return "gone"
	default:
		return "unknown"
	}
}

var (
	selfOnce sync.Once
	self     Owner
)

// Self returns the owner identity of the calling process.
func Self() Owner {
	selfOnce.Do(func() {
		self = Owner{PID: os.Getpid()}
		self.Host, _ = os.Hostname()
		self.Start, _ = startTime(self.PID)
		self.Boot = bootID()
		self.PIDNS = pidNamespace("self")
	})
	return self
}

// String renders the owner as host/boot/pidns/pid/start, the form stored in
// labels and in the lease table. The PID and start time come last so that
// a contested that reads the older host/pid/start form takes the rest for a
// hostname that is not its own and leaves the resource alone.
func (o Owner) String() string {
	if o.Boot == "" || o.PIDNS == 0 {
		return fmt.Sprintf("%s/%d/%d", o.Host, o.PID, o.Start)
	}
	return fmt.Sprintf("%s/%s/%d/%d/%d", o.Host, o.Boot, o.PIDNS, o.PID, o.Start)
}

// ErrBadOwner reports an owner string that is neither
// host/boot/pidns/pid/start nor the older host/pid/start.
var ErrBadOwner = errors.New("malformed owner")

// ParseOwner parses the form written by String, and the older
// host/pid/start form (whose owners have no Boot and can never be proven
// gone).
func ParseOwner(s string) (Owner, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 3 {
		return Owner{}, fmt.Errorf("parse owner %q: %w", s, ErrBadOwner)
	}
	n := len(parts)
	pid, err1 := strconv.Atoi(parts[n-2])
	start, err2 := strconv.ParseUint(parts[n-1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return Owner{}, fmt.Errorf("parse owner %q: %w", s, ErrBadOwner)
	}
	o := Owner{PID: pid, Start: start}
	if n >= 5 && isBootID(parts[n-4]) {
		ns, err := strconv.ParseUint(parts[n-3], 10, 64)
		if err == nil && ns > 0 {
			o.Boot, o.PIDNS = parts[n-4], ns
			o.Host = strings.Join(parts[:n-4], "/")
			return o, nil
		}
	}
	o.Host = strings.Join(parts[:n-2], "/")
	return o, nil
}

// Token is the owner as part of a file name: String in unpadded URL-safe
// base64 (letters, digits, "-" and "_"), so a file a process leaves where
// no label can go still names who made it. ParseToken reads it back.
func (o Owner) Token() string {
	return base64.RawURLEncoding.EncodeToString([]byte(o.String()))
}

// ParseToken parses the form written by Token.
func ParseToken(s string) (Owner, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Owner{}, fmt.Errorf("parse owner token %q: %w", s, ErrBadOwner)
	}
	return ParseOwner(string(b))
}

// Gone reports whether the owner has certainly exited (Liveness is Gone).
func (o Owner) Gone() bool {
	l, _ := o.Liveness()
	return l == Gone
}

// Liveness says whether the owner is provably alive or gone, or that this
// process cannot tell, with the reason in words. The rules, in order:
//
//   - no boot id (an older or unreadable identity): Unknown;
//   - another boot id: Gone when the hostname is this machine's (it has
//     rebooted since), Unknown otherwise (another machine sharing the
//     engine or the lease table);
//   - same boot, another PID namespace (a container, a CI runner sharing
//     the Docker engine): Unknown, since its PIDs mean nothing here;
//   - same boot and namespace: Gone when the PID is free or now belongs to
//     a process started at another time, Alive otherwise.
//
// The hostname alone never proves anything: containers and runners often
// share one.
func (o Owner) Liveness() (Liveness, string) {
	me := Self()
	switch {
	case o.Boot == "" || o.PIDNS == 0:
		return Unknown, "the owner carries no boot id and PID namespace (written by an older contested?), so its liveness cannot be proven"
	case me.Boot == "" || me.PIDNS == 0:
		return Unknown, "this process cannot read its own boot id and PID namespace from /proc"
	case o.Boot != me.Boot:
		if o.Host == me.Host {
			return Gone, fmt.Sprintf("host %s has rebooted since (boot %s, now %s)", o.Host, short(o.Boot), short(me.Boot))
		}
		return Unknown, fmt.Sprintf("the owner ran on host %s (boot %s), not on this machine (%s, boot %s)", o.Host, short(o.Boot), me.Host, short(me.Boot))
	case o.PIDNS != me.PIDNS:
		return Unknown, fmt.Sprintf("the owner runs in another PID namespace (%d; this process is in %d): a container or a runner sharing this machine, whose processes this one cannot see", o.PIDNS, me.PIDNS)
	}
	if err := syscall.Kill(o.PID, 0); errors.Is(err, syscall.ESRCH) {
		return Gone, fmt.Sprintf("process %d has exited", o.PID)
	}
	start, err := startTime(o.PID)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Gone, fmt.Sprintf("process %d has exited", o.PID)
		}
		return Unknown, fmt.Sprintf("read the start time of process %d: %v", o.PID, err)
	}
	if o.Start == 0 {
		return Unknown, fmt.Sprintf("process %d runs, and the owner carries no start time to tell a reused PID apart", o.PID)
	}
	if start != o.Start {
		return Gone, fmt.Sprintf("process %d has exited and its PID belongs to a later process", o.PID)
	}
	return Alive, fmt.Sprintf("process %d runs", o.PID)
}

// short trims a boot id for messages.
func short(boot string) string {
	if len(boot) > 8 {
		return boot[:8]
	}
	return boot
}

// isBootID reports whether s has the shape of a kernel boot id: a UUID,
// 8-4-4-4-12 lowercase hex digits.
func isBootID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// bootID reads the kernel's boot id, "" when /proc does not have it.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(b))
	if !isBootID(id) {
		return ""
	}
	return id
}

// pidNamespace reads the inode of a process's PID namespace from its
// /proc/<pid>/ns/pid link ("pid:[4026531836]"); 0 when it cannot.
func pidNamespace(pid string) uint64 {
	link, err := os.Readlink("/proc/" + pid + "/ns/pid")
	if err != nil {
		return 0
	}
	link = strings.TrimSuffix(strings.TrimPrefix(link, "pid:["), "]")
	n, err := strconv.ParseUint(link, 10, 64)
	if err != nil {
		return 0
	}
	return n
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
