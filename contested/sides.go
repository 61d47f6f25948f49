package contested

import (
	"fmt"
	"strings"
	"time"
)

// sides gathers the evidence that one armed fault fired, from both sides (docs/concepts/gate.md): the
// injector's (what it did and read back, and whether that proves the fault in place) and the
// victim's (what the code under test saw, each observation counted, whether it shows the fault
// landed, and when it first did). A fault fired only when both sides saw it ([sides.Both]); a
// lever may demand more. It is the one bookkeeper of firing evidence, for the leg API and the
// cluster rig alike.
//
// The zero value is ready. sides is not safe for concurrent use: its owner guards it.
type sides struct {
	injector []string
	injected bool
	victim   []string       // distinct observations, in the order first seen
	seen     map[string]int // how often each was seen
	landed   bool
	landedAt time.Time
}

// Injector records what the injector side did or read back ("" records the proof alone);
// proved says it shows the fault in place. Once proved, the injector side stays proved.
func (s *sides) Injector(what string, proved bool) {
	if what != "" {
		s.injector = append(s.injector, what)
	}
	s.injected = s.injected || proved
}

// Victim records what the victim side saw; landed says it shows the fault landed, and the
// first such observation's time at is when the fault fired.
func (s *sides) Victim(what string, landed bool, at time.Time) {
	if s.seen == nil {
		s.seen = map[string]int{}
	}
	if s.seen[what] == 0 {
		s.victim = append(s.victim, what)
	}
	s.seen[what]++
	if landed && !s.landed {
		s.landed, s.landedAt = true, at
	}
}

// Injected reports whether the injector side proved the fault in place.
func (s *sides) Injected() bool { return s.injected }

// Landed reports whether the victim side saw the fault land.
func (s *sides) Landed() bool { return s.landed }

// Both reports whether both sides saw the fault: it fired.
func (s *sides) Both() bool { return s.injected && s.landed }

// VictimKinds is how many different things the victim side saw.
func (s *sides) VictimKinds() int { return len(s.victim) }

// LandedAt is when the victim side first saw the fault land (zero when it did not).
func (s *sides) LandedAt() time.Time { return s.landedAt }

// InjectorText is the injector side's evidence, "; "-separated ("" when there is none).
func (s *sides) InjectorText() string { return strings.Join(s.injector, "; ") }

// VictimText is the victim side's evidence in the order first seen, "; "-separated, each
// observation seen more than once followed by its count ("ECONNRESET x2"); "" when there is
// none.
func (s *sides) VictimText() string {
	parts := make([]string, 0, len(s.victim))
	for _, what := range s.victim {
		if n := s.seen[what]; n > 1 {
			what = fmt.Sprintf("%s x%d", what, n)
		}
		parts = append(parts, what)
	}
	return strings.Join(parts, "; ")
}
