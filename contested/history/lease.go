package history

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// LeaseRef is the input of the lease ops: acquire sets Holder only; renew and release set all
// three; reclaim sets Port and Epoch (the reclaimer is not the holder).
type LeaseRef struct {
	Port   int    `json:"port,omitempty"`
	Epoch  int64  `json:"epoch,omitempty"`
	Holder string `json:"holder,omitempty"`
}

// Acquired is the output of an acquire that got a port. Reclaimed is true when the port was
// taken over from an expired lease rather than found free (the table's acquire statement
// reports the previous holder).
type Acquired struct {
	Port      int   `json:"port"`                // the port leased
	Epoch     int64 `json:"epoch"`               // the lease's epoch, which fences its renewals and release
	Reclaimed bool  `json:"reclaimed,omitempty"` // taken over from an expired lease
}

// Lease is the model of the port-lease table (fault_port_leases): each port is free or held
// by one holder under an epoch. Its ops:
//
//	acquire  input: LeaseRef{Holder}; output: Acquired, or "none-free"
//	renew    input: LeaseRef{Port, Epoch, Holder}; output: "ok" or "fenced"
//	release  input: LeaseRef{Port, Epoch, Holder}; output: "ok" (port freed) or "fenced"
//	reclaim  input: LeaseRef{Port, Epoch}; output: "ok" (expired lease freed) or "fenced"
//
// The properties it encodes, each of which makes a history illegal when broken:
//   - mutual exclusion: an acquire hands out a port only if it is free, or, when it says
//     Reclaimed, only if it was held (an expired lease taken over);
//   - fence monotonicity: every acquire of a port returns an epoch greater than any epoch
//     that port had before;
//   - stale epochs are rejected: renew, release and reclaim answer ok only when (port,
//     epoch, holder) is the current lease; answering ok to anything older is illegal, and
//     so is answering fenced to the current lease.
//
// Expiry is time, which the model does not see: it trusts the table's Reclaimed flag and
// reclaim ops to say when a lease expired, and checks that the old holder is fenced from then
// on. Renew therefore changes nothing the model tracks. Epochs a port had before the history
// began are unknown, so the first acquire of a port may return any positive epoch.
//
// The model's port set must be the table's whole port set, and the history must hold every
// client of those ports: an unrecorded holder makes "none-free" look illegal.
//
// An acquire with an unknown outcome may not have happened, or may have taken any one port
// (free, or held under an expired lease) under an epoch the model knows only a lower bound of;
// the model keeps every such possibility until later answers rule it out. The history is
// split per port unless it holds a "none-free" or an unknown acquire, which concern every
// port at once.
type Lease struct {
	index     map[int]int // port → slot in leaseState.ports
	ports     []int
	init      *leaseState
	unflagged bool // takeovers need not say Reclaimed
}

// WithUnflaggedTakeovers returns a copy of the model for histories whose acquire cannot say
// whether it took over an expired lease: any acquire may then take a held port. Mutual
// exclusion is then only checked through the fence (the old holder must be fenced from the
// takeover on), which is weaker; prefer recording Acquired.Reclaimed.
func (l *Lease) WithUnflaggedTakeovers() *Lease {
	c := *l
	c.unflagged = true
	return &c
}

// NewLease returns the Lease model over the given ports, all free at the start.
func NewLease(ports ...int) *Lease {
	l := &Lease{index: make(map[int]int, len(ports))}
	for _, p := range ports {
		if _, dup := l.index[p]; !dup {
			l.index[p] = len(l.ports)
			l.ports = append(l.ports, p)
		}
	}
	s := &leaseState{ports: make([]portState, len(l.ports))}
	for i := range s.ports {
		s.h += s.ports[i].hash(i)
	}
	l.init = s
	return l
}

// Name implements Model.
func (l *Lease) Name() string { return "lease" }

type leaseKind uint8

const (
	leaseAcquire leaseKind = iota + 1
	leaseRenew
	leaseRelease
	leaseReclaim
)

type leaseIn struct {
	kind   leaseKind
	port   int
	epoch  int64
	holder string
}

type leaseOut struct {
	res       result
	port      int // acquire: the port handed out
	epoch     int64
	reclaimed bool
}

// Translate implements Model.
func (l *Lease) Translate(op Op) (Translated, error) {
	var ref LeaseRef
	if err := decodeInput(op, &ref); err != nil {
		return Translated{}, err
	}
	in := leaseIn{port: ref.Port, epoch: ref.Epoch, holder: ref.Holder}
	switch op.Type {
	case TypeAcquire:
		in = leaseIn{kind: leaseAcquire, holder: ref.Holder}
		if ref.Holder == "" {
			return Translated{}, fmt.Errorf("%w: op %d (acquire) input %s: want holder", ErrInvalidHistory, op.ID, op.Input)
		}
		if op.Timeout {
			return Translated{Input: in, Output: leaseOut{res: resUnknown}}, nil
		}
		w, isWord := outcomeWord(op.Output)
		switch {
		case isWord && w == OutcomeNoneFree:
			return Translated{Input: in, Output: leaseOut{res: resNoneFree}}, nil
		case isWord && w == "" && op.Error != "":
			return Translated{Input: in, Output: leaseOut{res: resFailed}}, nil
		case !isWord:
			var a Acquired
			if err := json.Unmarshal(op.Output, &a); err == nil && a.Port > 0 {
				return Translated{Input: in, Output: leaseOut{res: resOK, port: a.Port, epoch: a.Epoch, reclaimed: a.Reclaimed}}, nil
			}
		}
		return Translated{}, badOutput(op, `{"port":…,"epoch":…} or "none-free"`)
	case TypeRenew, TypeRelease:
		in.kind = leaseRenew
		if op.Type == TypeRelease {
			in.kind = leaseRelease
		}
		if ref.Port == 0 || ref.Holder == "" {
			return Translated{}, fmt.Errorf("%w: op %d (%s) input %s: want port, epoch and holder", ErrInvalidHistory, op.ID, op.Type, op.Input)
		}
	case TypeReclaim:
		in.kind = leaseReclaim
		if ref.Port == 0 {
			return Translated{}, fmt.Errorf("%w: op %d (reclaim) input %s: want port and epoch", ErrInvalidHistory, op.ID, op.Input)
		}
	default:
		return Translated{}, fmt.Errorf("%w: op %d: the lease model has no op type %q", ErrInvalidHistory, op.ID, op.Type)
	}
	res, err := okOr(op, OutcomeFenced, resFenced)
	return Translated{Input: in, Output: leaseOut{res: res}}, err
}

// portState is one row of the table as the model knows it. holder "" is free. epoch is the
// port's epoch; with floor set it is only a lower bound, because the port was taken by an
// acquire whose answer was lost (the table handed out some epoch above the last one known).
type portState struct {
	holder string
	epoch  int64
	floor  bool
}

func (p portState) hash(slot int) uint64 {
	h := mix64(uint64(slot)+1) ^ hashString(p.holder) ^ mix64(uint64(p.epoch)<<1)
	if p.floor {
		h = ^h
	}
	return mix64(h)
}

// matches reports whether (epoch) is, or may be, the port's current epoch: exactly when the
// epoch is known, or at least the floor when it is not.
func (p portState) matches(epoch int64) (surely, maybe bool) {
	if p.floor {
		return false, epoch >= p.epoch
	}
	return p.epoch == epoch, p.epoch == epoch
}

// leaseState is immutable; h is the sum of the ports' hashes, kept current on every change.
type leaseState struct {
	ports []portState
	h     uint64
}

func (s *leaseState) with(slot int, p portState) *leaseState {
	n := &leaseState{ports: slices.Clone(s.ports), h: s.h - s.ports[slot].hash(slot) + p.hash(slot)}
	n.ports[slot] = p
	return n
}

// step moves one table on one op; see family.step.
func (l *Lease) step(ctx context.Context, s *leaseState, input, output any, emit func(*leaseState)) {
	in, out := input.(leaseIn), output.(leaseOut)
	switch {
	case out.res == resFailed:
		emit(s) // a definite failure changed nothing
	case in.kind == leaseAcquire:
		l.stepAcquire(ctx, s, in, out, emit)
	default:
		l.stepHeld(s, in, out, emit)
	}
}

// stepAcquire moves one table on an acquire.
func (l *Lease) stepAcquire(ctx context.Context, s *leaseState, in leaseIn, out leaseOut, emit func(*leaseState)) {
	switch out.res {
	case resNoneFree:
		for _, p := range s.ports {
			if p.holder == "" {
				return // a port was free
			}
		}
		emit(s)
	case resUnknown:
		// Not (yet) applied, or it took any one port: a free one, or a held one whose
		// lease expired, under some epoch above the last.
		emit(s)
		for slot, p := range s.ports {
			if slot%256 == 255 && ctx.Err() != nil {
				return
			}
			emit(s.with(slot, portState{holder: in.holder, epoch: p.epoch + 1, floor: true}))
		}
	case resOK:
		slot, ok := l.index[out.port]
		if !ok {
			return // handed out a port that is not in the table
		}
		p := s.ports[slot]
		switch {
		case out.epoch <= p.epoch:
			return // the fence went backwards or repeated
		case out.reclaimed && p.holder == "":
			return // "took over an expired lease" of a port nobody held
		case !out.reclaimed && p.holder != "" && !l.unflagged:
			return // two holders at once
		}
		emit(s.with(slot, portState{holder: in.holder, epoch: out.epoch}))
	}
}

// stepHeld moves one table on an op on a held lease: renew, release or
// reclaim.
func (l *Lease) stepHeld(s *leaseState, in leaseIn, out leaseOut, emit func(*leaseState)) {
	slot, ok := l.index[in.port]
	if !ok {
		// Nobody can hold a port outside the table: fenced is the only right answer.
		if out.res == resFenced || out.res == resUnknown {
			emit(s)
		}
		return
	}
	p := s.ports[slot]
	surely, maybe := p.matches(in.epoch)
	if p.holder == "" || (in.kind != leaseReclaim && p.holder != in.holder) {
		surely, maybe = false, false
	}
	switch out.res {
	case resOK:
		switch {
		case !maybe:
			return // a stale or foreign lease answered ok
		case in.kind == leaseRenew:
			if p.floor {
				p.epoch, p.floor = in.epoch, false // now the epoch is known
				emit(s.with(slot, p))
				return
			}
			emit(s)
		default:
			emit(s.with(slot, portState{epoch: in.epoch})) // released or reclaimed: free
		}
	case resFenced:
		if !surely {
			emit(s) // the current lease is refused only if it is not current
		}
	case resUnknown:
		emit(s)
		if maybe && in.kind != leaseRenew {
			emit(s.with(slot, portState{epoch: in.epoch}))
		}
	}
}

// Porcupine implements Model.
func (l *Lease) Porcupine() porcupine.Model {
	f := &family[*leaseState]{
		hash:     func(s *leaseState) uint64 { return s.h },
		equal:    func(s, t *leaseState) bool { return s == t || (s.h == t.h && slices.Equal(s.ports, t.ports)) },
		step:     l.step,
		describe: l.describe,
	}
	pm := f.porcupine(l.init)
	pm.Partition = partitionLease
	pm.DescribeOperation = describeLeaseOp
	return pm
}

// partitionLease splits by port unless an op concerns every port at once ("none-free", or an
// acquire whose port is unknown).
func partitionLease(history []porcupine.Operation) [][]porcupine.Operation {
	byPort := make(map[int][]porcupine.Operation)
	var order []int
	for _, op := range history {
		in, out := op.Input.(leaseIn), op.Output.(leaseOut)
		port := in.port
		if in.kind == leaseAcquire {
			switch out.res {
			case resNoneFree, resUnknown:
				return [][]porcupine.Operation{history}
			case resOK:
				port = out.port
			default:
				port = 0 // a definite failure: a no-op, checked on its own
			}
		}
		if _, ok := byPort[port]; !ok {
			order = append(order, port)
		}
		byPort[port] = append(byPort[port], op)
	}
	out := make([][]porcupine.Operation, 0, len(order))
	for _, p := range order {
		out = append(out, byPort[p])
	}
	return out
}

func describeLeaseOp(input, output any) string {
	in, out := input.(leaseIn), output.(leaseOut)
	var s string
	switch in.kind {
	case leaseAcquire:
		switch out.res {
		case resOK:
			s = fmt.Sprintf("acquire(%s) → port %d epoch %d", in.holder, out.port, out.epoch)
			if out.reclaimed {
				s += " (reclaimed)"
			}
		default:
			s = fmt.Sprintf("acquire(%s) → %s", in.holder, out.res)
		}
	case leaseRenew, leaseRelease:
		verb := "renew"
		if in.kind == leaseRelease {
			verb = "release"
		}
		s = fmt.Sprintf("%s(port %d, epoch %d, %s) → %s", verb, in.port, in.epoch, in.holder, out.res)
	case leaseReclaim:
		s = fmt.Sprintf("reclaim(port %d, epoch %d) → %s", in.port, in.epoch, out.res)
	}
	return html.EscapeString(s)
}

func (l *Lease) describe(s *leaseState) string {
	var b strings.Builder
	for i, p := range s.ports {
		if i > 0 {
			b.WriteString(", ")
		}
		holder := p.holder
		if holder == "" {
			holder = "free"
		}
		if p.floor {
			fmt.Fprintf(&b, "%d: %s@%d+", l.ports[i], holder, p.epoch)
		} else {
			fmt.Fprintf(&b, "%d: %s@%d", l.ports[i], holder, p.epoch)
		}
	}
	return html.EscapeString(b.String())
}
