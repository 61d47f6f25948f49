package fx

import "strconv"

// Clamp keeps v within lo and hi.
func Clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// Label names n.
func Label(n int) string { return "n" + "=" + strconv.Itoa(n) }

// Sum adds the numbers below n.
func Sum(n int) int {
	s := 0
	for i := 0; i != n; i++ {
		s += i
	}
	return s
}

func untested(a int) bool { return a > 3 }

// Add adds (a numeric +: a mutant of it compiles).
func Add(a, b int) int { return a + b }
