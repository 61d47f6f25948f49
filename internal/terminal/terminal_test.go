package terminal

import (
	"strings"
	"testing"

	"github.com/contested/contested/internal/workflowtest"
)

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

// TestLinesKeepsLinesAndShowsTheRest: an echoed output keeps its newlines
// and tabs; a carriage return, ESC and the rest show as escapes.
func TestLinesKeepsLinesAndShowsTheRest(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain lines", "a\n\tb\n", "a\n\tb\n"},
		{"a carriage return that would overwrite a line", "ok\rFAIL\n", `ok\rFAIL` + "\n"},
		{"a retitle and a cursor move", "x\x1b]0;owned\x07\x1b[2Ay\n", `x\x1b]0;owned\x07\x1b[2Ay` + "\n"},
		{"a C1 CSI", "x\u009b2J", `x\u009b2J`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Lines(tt.in); got != tt.want {
				t.Errorf("Lines(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestInertIsNeverACommand: whatever s holds, Inert(s) printed on a line
// of its own, or after a prefix, is no workflow command, and it has no
// carriage return.
func TestInertIsNeverACommand(t *testing.T) {
	tests := []struct{ name, in string }{
		{"a command", "::error title=x::y"},
		{"a command after spaces", "   ::warning::y"},
		{"a command after a newline", "fine\n::error::y"},
		{"a command after a carriage return", "fine\r::error::y"},
		{"the legacy form mid-line", "fine ##[error]y"},
		{"the legacy form after a newline", "fine\n##[add-mask]y"},
		{"a tab then a command", "\t::error::y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, line := range []string{Inert(tt.in), "Error: " + Inert(tt.in)} {
				if c := workflowtest.Commands(line + "\n"); len(c) > 0 || strings.Contains(line, "\r") {
					t.Errorf("%q is read as %v", line, c)
				}
			}
		})
	}
}
