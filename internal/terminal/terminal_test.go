package terminal

import "testing"

// TestEscapeShowsWhatATerminalWouldActOn: control characters, bidi
// overrides and invalid UTF-8 are written as escapes; ordinary names,
// accented letters and subtest paths are left as they are.
func TestEscapeShowsWhatATerminalWouldActOn(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"a plain name", "TestStock/reset", "TestStock/reset"},
		{"letters beyond ASCII", "TestCafé/ß", "TestCafé/ß"},
		{"an escape sequence", "TestA\x1b[2J\x1b[31mGREEN", `TestA\x1b[2J\x1b[31mGREEN`},
		{"a newline and a carriage return", "TestA\nok  \tfake\r", `TestA\nok  \tfake\r`},
		{"a C1 control", "TestA\u009b2J", `TestA\u009b2J`},
		{"a bidi override", "TestA\u202eevil", `TestA\u202eevil`},
		{"bytes that are not UTF-8", "TestA\xff\xfe", `TestA\xff\xfe`},
		{"DEL and a backspace", "TestA\x7f\b", `TestA\x7f\x08`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Escape(tt.in); got != tt.want {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
