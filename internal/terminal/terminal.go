// Package terminal makes text that came from elsewhere safe to print: a
// test's name or output, a registry field, a name from a history file, a
// record or a manifest may hold an escape sequence, a newline or a
// carriage return that would rewrite what a terminal shows (move the
// cursor, retitle the window, overwrite a line) or a line that a CI
// runner reads as a command of its own. Escape and Lines neutralise the
// first; Guard (under GitHub Actions) the second.
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

// Inert renders s so that no terminal acts on it and no GitHub Actions
// runner reads a workflow command in it wherever it is printed: each line
// is escaped (Escape: a carriage return, ESC and the rest show as Go
// escapes) and keeps its newline; a line's leading "::" (after spaces)
// shows its first colon as \x3a, and the runner's legacy "##[", which it
// reads anywhere in a line, shows as #\x23[. For text printed outside a
// stop-commands block (Guard), such as the error a command ends with on
// stderr.
func Inert(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		l = strings.ReplaceAll(Escape(l), "##[", `#\x23[`)
		if rest := strings.TrimLeft(l, " "); strings.HasPrefix(rest, "::") {
			l = l[:len(l)-len(rest)] + `\x3a` + rest[1:]
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// Lines is Escape for text of several lines (a test's output echoed): its
// newlines and tabs stay as they are, every other control character (a
// carriage return, ESC, a backspace) is written as a Go escape.
func Lines(s string) string {
	if !needs(strings.NewReplacer("\n", "", "\t", "").Replace(s)) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		for j := range parts {
			parts[j] = Escape(parts[j])
		}
		lines[i] = strings.Join(parts, "\t")
	}
	return strings.Join(lines, "\n")
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
