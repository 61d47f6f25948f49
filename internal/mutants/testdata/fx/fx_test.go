package fx

import "testing"

func TestClamp(t *testing.T) {
	if Clamp(5, 0, 10) != 5 || Clamp(-1, 0, 10) != 0 {
		t.Fatal("clamp")
	}
}

func TestLabel(t *testing.T) {
	if Label(2) != "n=2" {
		t.Fatal("label")
	}
}

func TestSum(t *testing.T) {
	if Sum(3) != 3 {
		t.Fatal("sum")
	}
}
