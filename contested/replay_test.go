package contested

import "testing"

func TestRunPattern(t *testing.T) {
	for in, want := range map[string]string{
		"TestA":       "^TestA$",
		"TestA/reset": "^TestA$/^reset$",
		"TestA/x.y":   `^TestA$/^x\.y$`,
	} {
		if got := RunPattern(in); got != want {
			t.Errorf("RunPattern(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReplayCommand(t *testing.T) {
	got := ReplayCommand(42, "./store", "TestStoreContract/reset.1")
	want := `CONTESTED_SEED=42 go test ./store -run '^TestStoreContract$/^reset\.1$' -count=1`
	if got != want {
		t.Errorf("ReplayCommand = %s, want %s", got, want)
	}
}
