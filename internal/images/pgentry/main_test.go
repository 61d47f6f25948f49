package main

import "testing"

func TestQuoting(t *testing.T) {
	tests := []struct {
		name, in, ident, literal string
	}{
		{"plain", "alice", `"alice"`, `'alice'`},
		{"quotes", `it's "x"`, `"it's ""x"""`, `'it''s "x"'`},
		{"statement breaker", "x'; DROP DATABASE postgres; --", `"x'; DROP DATABASE postgres; --"`, `'x''; DROP DATABASE postgres; --'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ident(tt.in); got != tt.ident {
				t.Errorf("ident(%q) = %s, want %s", tt.in, got, tt.ident)
			}
			if got := literal(tt.in); got != tt.literal {
				t.Errorf("literal(%q) = %s, want %s", tt.in, got, tt.literal)
			}
		})
	}
}
