// Package terminal makes text read from disk safe to print: a name from a
// history file, a record or a manifest may hold an escape sequence, a
// newline or a carriage return that would rewrite what a terminal (or a CI
// log) shows.
package terminal

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape renders s with every control character (C0, DEL, C1: ESC, a
// newline, a carriage return, a tab, a backspace), every bidirectional
// override and isolate, and every byte that is not UTF-8 written as a Go
// escape (\x1b, \n, \u202e, \xff), so that it prints as one line that
// shows what it holds. Text without such characters is returned as it is.
func Escape(s string) string {
	if !needs(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafe(r):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// needs reports whether s holds anything Escape changes.
func needs(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafe(r) {
			return true
		}
		i += size
	}
	return false
}

// unsafe reports a rune a terminal acts on instead of showing: a control
// character or a bidirectional formatting character.
func unsafe(r rune) bool {
	return unicode.IsControl(r) || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}
