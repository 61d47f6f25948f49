package contested

import (
	"testing"
	"time"
)

func TestSides(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 15, 0, 0, time.UTC)
	tests := []struct {
		name             string
		do               func(s *sides)
		injected, landed bool
		landedAt         time.Time
		injector, victim string
	}{
		{name: "nothing seen", do: func(*sides) {}},
		{name: "the injector alone never fired", do: func(s *sides) { s.Injector("proxy disabled", true) },
			injected: true, injector: "proxy disabled"},
		{name: "the victim alone never fired", do: func(s *sides) { s.Victim("ECONNRESET", true, t0) },
			landed: true, landedAt: t0, victim: "ECONNRESET"},
		{name: "both sides: fired at the first landing, counts kept", do: func(s *sides) {
			s.Injector("reset_peer added", false)
			s.Injector("read back: present", true)
			s.Injector("a later note that proves nothing", false)
			s.Injector("", false)
			s.Victim("ECONNRESET", true, t0)
			s.Victim("EOF", true, t0.Add(time.Second))
			s.Victim("ECONNRESET", true, t0.Add(2*time.Second))
		}, injected: true, landed: true, landedAt: t0,
			injector: "reset_peer added; read back: present; a later note that proves nothing", victim: "ECONNRESET x2; EOF"},
		{name: "evidence that does not show a landing", do: func(s *sides) {
			s.Injector("SIGKILL", true)
			s.Victim("no replica was working", false, t0)
		}, injected: true, injector: "SIGKILL", victim: "no replica was working"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s sides
			tc.do(&s)
			if s.Injected() != tc.injected || s.Landed() != tc.landed || s.Both() != (tc.injected && tc.landed) ||
				!s.LandedAt().Equal(tc.landedAt) || s.InjectorText() != tc.injector || s.VictimText() != tc.victim {
				t.Errorf("injected %v landed %v both %v at %v, injector %q, victim %q", s.Injected(), s.Landed(), s.Both(),
					s.LandedAt(), s.InjectorText(), s.VictimText())
			}
		})
	}
}
