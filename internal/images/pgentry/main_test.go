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

func TestWireDecoding(t *testing.T) {
	row := []byte{0, 3, 0, 0, 0, 1, '1', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2, 'o', 'k'}
	got, err := dataRow(row)
	if err != nil || len(got) != 3 || got[0] != "1" || got[1] != "" || got[2] != "ok" {
		t.Errorf("dataRow = %q, %v; want [1  ok]", got, err)
	}
	for _, bad := range [][]byte{{0}, {0, 1, 0, 0}, {0, 1, 0, 0, 0, 9, 'x'}} {
		if _, err := dataRow(bad); err == nil {
			t.Errorf("dataRow(%v) accepted a short row", bad)
		}
	}
	e := []byte("SERROR\x00C42P04\x00Mdatabase \"x\" already exists\x00\x00")
	if got, want := errorText(e), `ERROR 42P04: database "x" already exists`; got != want {
		t.Errorf("errorText = %q, want %q", got, want)
	}
}
