package seed

import (
	"errors"
	"testing"
)

// TestASeedIsAPositiveInteger: CONTESTED_SEED holds a positive integer or
// nothing; 0, which is "no seed" everywhere, is refused like any other
// value that is none, saying what to do.
func TestASeedIsAPositiveInteger(t *testing.T) {
	tests := []struct {
		in   string
		want Seed
		bad  bool
	}{
		{"", Unset, false},
		{" 42 ", 42, false},
		{"9223372036854775807", 9223372036854775807, false},
		{"0", Unset, true},
		{"-1", Unset, true},
		{"forty-two", Unset, true},
		{"1e3", Unset, true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.bad != (err != nil) || got != tt.want {
			t.Errorf("Parse(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.bad)
		}
		if tt.bad && !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q): %v is not ErrInvalid", tt.in, err)
		}
	}
}

// TestOneSeedDrawsOneStreamPerPurpose: a seed and a purpose make one
// stream, the same every time; another purpose or another seed another.
func TestOneSeedDrawsOneStreamPerPurpose(t *testing.T) {
	draw := func(s Seed, purpose string) [3]uint64 {
		r := s.Rand(purpose)
		return [3]uint64{r.Uint64(), r.Uint64(), r.Uint64()}
	}
	if draw(7, "leg") != draw(7, "leg") {
		t.Error("one seed and purpose drew two streams")
	}
	if draw(7, "leg") == draw(7, "degraded") || draw(7, "leg") == draw(8, "leg") {
		t.Error("another purpose or seed drew the same stream")
	}
	if !New().IsSet() || New() == New() && New() == New() {
		t.Error("a fresh seed is unset, or always the same")
	}
}

func TestTheReplayNamesTheSeedAndTheLevel(t *testing.T) {
	for _, tt := range []struct {
		s     Seed
		level int
		want  string
	}{
		{42, 1, `CONTESTED_SEED=42 go test ./store -run '^TestStoreContract$/^reset\.1$' -count=1`},
		{42, 3, `CONTESTED_SEED=42 CONTESTED_LEVEL=3 go test ./store -run '^TestStoreContract$/^reset\.1$' -count=1`},
		{Unset, 1, `go test ./store -run '^TestStoreContract$/^reset\.1$' -count=1`},
	} {
		if got := tt.s.Replay(tt.level, "./store", "TestStoreContract/reset.1"); got != tt.want {
			t.Errorf("Replay = %s, want %s", got, tt.want)
		}
	}
	if got := RunPattern("TestA/x.y"); got != `^TestA$/^x\.y$` {
		t.Errorf("RunPattern = %s", got)
	}
}
