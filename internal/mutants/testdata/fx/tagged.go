//go:build never

package fx

func tagged(a int) int { return a + 1 }
