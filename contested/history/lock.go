package history

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"time"

	"github.com/anishathalye/porcupine"
)

// LockRef is the input of the lock ops: the holder (the client's identity as the lock service
// knows it) and, for renew, release and act, the fencing token its acquire returned (0 for a
// lock without tokens).
type LockRef struct {
	Holder string `json:"holder"`          // the client, as the lock service knows it
	Token  int64  `json:"token,omitempty"` // the fencing token its acquire returned
}

// Granted is the output of an acquire that got the lock: the fencing token of this grant (0
// for a lock without tokens).
type Granted struct {
	Token int64 `json:"token"` // the fencing token of this grant
}

// Op types and outcomes of the lock model besides acquire, renew and release.
const (
	// TypeAct is something a holder did as the holder: a write fenced by its token, a
	// message sent because it led, any work only one client may do at a time. Record an act
	// when the client asks to act and complete it "ok" when the work was done, "fenced" when
	// the component refused because the lease was lost.
	TypeAct = "act"
	// OutcomeBusy: an acquire refused because another holder has the lock.
	OutcomeBusy = "busy"
)

// LockSpec declares what a lock promises.
type LockSpec struct {
	// TTL is the lease's time to live: a grant or renewal keeps the lock for TTL from the
	// moment the service applied it, and then it expires unless renewed. 0 means the lock
	// never expires: it is held until released.
	TTL time.Duration
	// Fencing: every acquire that gets the lock answers a fencing token greater than every
	// token the lock had before.
	Fencing bool
	// RecordsRenewals: the history holds every renewal of every lease (the component's own
	// heartbeat included, through a hook), so an act past the last moment its lease could
	// have lasted is an anomaly. Leave it false when renewals are hidden from the recorder.
	RecordsRenewals bool
	// Reacquire bounds how long an abandoned lock stays unavailable past its TTL: an
	// acquire answered busy later than TTL + Reacquire after the last sign of life of any
	// holder (an acquire or renewal that took effect; with hidden renewals, also an act
	// answered ok) is an anomaly. It needs the history to show every live holder's activity
	// (RecordsRenewals, or acts more often than Reacquire); 0 leaves it unchecked.
	Reacquire time.Duration
	// Slack absorbs the difference between the clients' clock and the service's over one
	// TTL (the service stamps expiry with its own clock); 0 means 1 ms plus 1% of the TTL.
	Slack time.Duration
	// EffectWithin bounds when an op whose answer was lost took effect, if it did: before
	// its client gave up on it plus EffectWithin (the service's statement timeout). 0 keeps
	// the package's rule, any time after its invoke: a renewal or acquire whose answer was
	// lost may then have extended a lease without bound, and the expiry and reacquire checks
	// do not judge past it.
	EffectWithin time.Duration
}

// Lock is the model of a named lock or lease service: each key is one lock, held by at most
// one holder at a time, granted with a fencing token that only grows, and lost by a holder
// when it expires, is released, or is taken over after expiry. Its ops (key = the lock):
//
//	acquire  input: LockRef{Holder}; output: Granted, or "busy"
//	renew    input: LockRef{Holder, Token}; output: "ok", or "fenced" (the lease is lost)
//	release  input: LockRef{Holder, Token}; output: "ok", or "fenced"
//	act      input: LockRef{Holder, Token}; output: "ok" (done as the holder), or "fenced"
//
// A failed op (an error that guarantees nothing happened) changes nothing; a timed-out one
// may or may not have taken effect, at any time after its invoke.
//
// The linearizability search checks, per lock, that tokens grow (Fencing), that "busy" is
// never answered while the lock is free, and that no renew or act succeeds under a lease
// that a later grant superseded or that the service already answered "fenced" for. Expiry is
// time, which no sequential order sees, so the search lets a grant take over a held lock; the
// real-time promises are audited over the ops' times instead:
//
//   - fencing tokens increase: an acquire that began after another ended got a greater token;
//   - one holder at a time: no grant to another holder falls inside a lease's certain life
//     (from its grant's answer to the grant's invoke plus TTL, extended by each renewal
//     answered ok, until a release was sent);
//   - a lost lease is noticed before acting: no act answered ok began after another holder's
//     grant was answered, after the holder was told "fenced", after it released, or (with
//     RecordsRenewals) after its lease could last;
//   - an abandoned lock is acquirable again (with Reacquire).
//
// Each broken promise is reported as an Anomaly in plain words, for example
// "two holders: client-2 acquired lock L at 12.31 s (token 8) while client-1 held it since
// 12.02 s (token 7; its lease was good until at least 12.52 s)".
type Lock struct {
	spec LockSpec
}

var _ Auditor = (*Lock)(nil)

// NewLock returns the lock model for spec.
func NewLock(spec LockSpec) *Lock {
	if spec.Slack == 0 {
		spec.Slack = time.Millisecond + spec.TTL/100
	}
	return &Lock{spec: spec}
}

// Name implements Model.
func (l *Lock) Name() string { return "lock" }

type lockKind uint8

const (
	lockAcquire lockKind = iota + 1
	lockRenew
	lockRelease
	lockAct
)

var lockKinds = map[string]lockKind{TypeAcquire: lockAcquire, TypeRenew: lockRenew, TypeRelease: lockRelease, TypeAct: lockAct}

type lockIn struct {
	kind   lockKind
	key    string
	holder string
	token  int64
}

type lockOut struct {
	res   result
	token int64 // acquire ok: the granted token
}

// Translate implements Model.
func (l *Lock) Translate(op Op) (Translated, error) {
	kind, ok := lockKinds[op.Type]
	if !ok {
		return Translated{}, fmt.Errorf("%w: op %d: the lock model has no op type %q", ErrInvalidHistory, op.ID, op.Type)
	}
	if op.Key == "" {
		return Translated{}, fmt.Errorf("%w: op %d (%s) has no key: name the lock", ErrInvalidHistory, op.ID, op.Type)
	}
	var ref LockRef
	if err := decodeInput(op, &ref); err != nil {
		return Translated{}, err
	}
	if ref.Holder == "" {
		return Translated{}, fmt.Errorf("%w: op %d (%s) input %s: want holder", ErrInvalidHistory, op.ID, op.Type, op.Input)
	}
	in := lockIn{kind: kind, key: op.Key, holder: ref.Holder, token: ref.Token}
	if !l.spec.Fencing {
		in.token = 0
	}
	w, isWord := outcomeWord(op.Output)
	var out lockOut
	switch {
	case op.Timeout:
		out.res = resUnknown
	case isWord && w == "" && op.Error != "":
		out.res = resFailed
	case kind == lockAcquire && isWord && w == OutcomeBusy:
		out.res = resBusy
	case kind == lockAcquire && isWord && w == OutcomeOK && !l.spec.Fencing:
		out.res = resOK
	case kind == lockAcquire && !isWord:
		var g Granted
		if err := json.Unmarshal(op.Output, &g); err != nil || (l.spec.Fencing && g.Token <= 0) {
			return Translated{}, badOutput(op, `{"token":…} (a positive token) or "busy"`)
		}
		out.res, out.token = resOK, g.Token
		if !l.spec.Fencing {
			out.token = 0
		}
	case kind != lockAcquire:
		var err error
		if out.res, err = okOr(op, OutcomeFenced, resFenced); err != nil {
			return Translated{}, err
		}
	default:
		return Translated{}, badOutput(op, `{"token":…} or "busy"`)
	}
	return Translated{Input: in, Output: out}, nil
}

// lockState is one lock as the search knows it: its holder ("" when free), the token of the
// current grant (only a lower bound when floor: an acquire whose answer was lost may have
// taken it), and whether the service already answered "fenced" for that grant (dead).
type lockState struct {
	holder string
	token  int64
	floor  bool
	dead   bool
}

func (s lockState) hash() uint64 {
	h := hashString(s.holder) ^ mix64(uint64(s.token)<<2)
	if s.floor {
		h = ^h
	}
	if s.dead {
		h = mix64(h + 1)
	}
	return mix64(h)
}

// matches reports whether (holder, token) is, or may be, the current grant.
func (s lockState) matches(holder string, token int64) (surely, maybe bool) {
	if s.holder == "" || s.holder != holder {
		return false, false
	}
	if s.floor {
		return false, token >= s.token
	}
	return s.token == token, s.token == token
}

// step moves one lock on one op; see family.step.
func (l *Lock) step(_ context.Context, s lockState, input, output any, emit func(lockState)) {
	in, out := input.(lockIn), output.(lockOut)
	if out.res == resFailed {
		emit(s)
		return
	}
	surely, maybe := s.matches(in.holder, in.token)
	switch in.kind {
	case lockAcquire:
		switch out.res {
		case resOK:
			if l.spec.Fencing && out.token <= s.token {
				return // the fence went backwards or repeated
			}
			emit(lockState{holder: in.holder, token: out.token})
		case resBusy:
			if s.holder != "" {
				emit(s) // "busy" while free is illegal
			}
		case resUnknown:
			emit(s)
			next := s.token
			if l.spec.Fencing {
				next++
			}
			emit(lockState{holder: in.holder, token: next, floor: l.spec.Fencing})
		}
	case lockRenew, lockAct:
		switch out.res {
		case resOK:
			if !maybe || s.dead {
				return // a superseded or lost lease answered ok
			}
			s.token, s.floor = in.token, false // a floor is now known
			emit(s)
		case resFenced:
			l.fenced(s, surely, maybe, emit)
		case resUnknown:
			emit(s)
		}
	case lockRelease:
		switch out.res {
		case resOK:
			if maybe {
				emit(lockState{token: in.token})
			}
		case resFenced:
			l.fenced(s, surely, maybe, emit)
		case resUnknown:
			emit(s)
			if maybe {
				emit(lockState{token: in.token})
			}
		}
	}
}

// fenced moves a lock on a "fenced" answer: the grant it names, if current, is dead from now
// on (its lease expired or was lost); any other grant is unchanged.
func (l *Lock) fenced(s lockState, surely, maybe bool, emit func(lockState)) {
	if !surely {
		emit(s)
	}
	if maybe {
		d := s
		d.dead = true
		emit(d)
	}
}

// Porcupine implements Model: the search, one partition per lock.
func (l *Lock) Porcupine() porcupine.Model {
	f := &family[lockState]{
		hash:     lockState.hash,
		equal:    func(a, b lockState) bool { return a == b },
		step:     l.step,
		describe: describeLockState,
	}
	pm := f.porcupine(lockState{})
	pm.Partition = partitionBy(func(in any) string { return in.(lockIn).key })
	pm.DescribeOperation = describeLockOp
	return pm
}

// partitionBy splits a history into one partition per key, in order of first appearance.
func partitionBy(key func(input any) string) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := make(map[string][]porcupine.Operation)
		var order []string
		for _, op := range history {
			k := key(op.Input)
			if _, ok := byKey[k]; !ok {
				order = append(order, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			out = append(out, byKey[k])
		}
		return out
	}
}

func describeLockOp(input, output any) string {
	in, out := input.(lockIn), output.(lockOut)
	verb := map[lockKind]string{lockAcquire: "acquire", lockRenew: "renew", lockRelease: "release", lockAct: "act"}[in.kind]
	var s string
	switch {
	case in.kind == lockAcquire && out.res == resOK:
		s = fmt.Sprintf("acquire(%s, %s) → token %d", in.key, in.holder, out.token)
	case in.kind == lockAcquire:
		s = fmt.Sprintf("acquire(%s, %s) → %s", in.key, in.holder, out.res)
	default:
		s = fmt.Sprintf("%s(%s, %s, token %d) → %s", verb, in.key, in.holder, in.token, out.res)
	}
	return html.EscapeString(s)
}

func describeLockState(s lockState) string {
	t := fmt.Sprintf("%d", s.token)
	if s.floor {
		t = fmt.Sprintf("at least %d", s.token)
	}
	switch {
	case s.holder == "":
		return html.EscapeString("free (last token " + t + ")")
	case s.dead:
		return html.EscapeString(fmt.Sprintf("held by %s with token %s, told it is lost", s.holder, t))
	}
	return html.EscapeString(fmt.Sprintf("held by %s with token %s", s.holder, t))
}
