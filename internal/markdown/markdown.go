// Package markdown renders text that came from elsewhere (a test's name,
// its failure, a registry field, a command line) as literal Markdown: it
// shows as written and never becomes markup, a link, an image, HTML, an
// entity, a table cell or a line of its own. Every Markdown contested
// writes (the CI step summary, the ladder's issue bodies) goes through it.
package markdown

import (
	"strings"
	"unicode/utf8"

	"github.com/contested/contested/internal/terminal"
)

// MaxText is the longest a rendered value is (in bytes, before escaping):
// a failure message of a megabyte helps no reader of a summary or an
// issue. What is cut is marked with "…".
const MaxText = 600

// active are the characters Markdown, GitHub's extensions to it or HTML
// can act on anywhere in a line: an escape, code, emphasis and
// strikethrough, a link or an image, a heading's closing hashes, math, a
// table cell, HTML, an autolink and an entity. Each is backslash-escaped;
// other punctuation is left as written, so the raw Markdown reads as the
// text does (adopter.stock, not adopter\.stock).
const active = "\\`*_~[]()!#$|<>&{}"

// Text renders s as literal Markdown text on one line: control characters
// (a newline and a carriage return among them) shown as Go escapes, the
// characters Markdown or HTML acts on backslash-escaped (active, and a
// leading +, -, = or number and dot, which would open a list, a rule or a
// setext heading where s starts a block), clipped to MaxText.
// Safe in a paragraph, a list item, a heading and a table cell.
func Text(s string) string {
	s = Clip(terminal.Escape(s), MaxText)
	var b strings.Builder
	for i, r := range s {
		switch {
		case r < utf8.RuneSelf && strings.ContainsRune(active, r),
			i == 0 && (r == '+' || r == '-' || r == '='),
			(r == '.' || r == ')') && i > 0 && leadingNumber(s[:i]):
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// leadingNumber reports whether s is all digits, as the start of a line
// that an ordered list's "1." would begin.
func leadingNumber(s string) bool {
	return strings.TrimLeft(s, "0123456789") == ""
}

// Code renders s as a code span (span), on one line, clipped to MaxText.
// Never in a table cell: there a pipe would end the cell (Text is for
// cells). A command a reader copies is Command's, never Code's: Code clips.
func Code(s string) string {
	return span(Clip(terminal.Escape(s), MaxText))
}

// Command renders a command line (a replay, a go test or mage command) as
// a code span whose content is the command byte for byte: a reader who
// copies it from the rendered page or from the raw Markdown runs exactly
// the command contested printed. It is the one place a Markdown writer
// turns a command into Markdown, so that no writer backslash-escapes one
// (an escape inside a code span is copied as a backslash) or leaves it
// raw (where *, _, <, | or $(...) would become markup). Never clipped: a
// clipped command runs something else. Control characters, which no code
// span can hold on one line, show as Go escapes (terminal.Escape). Not
// for a table cell: a pipe there ends the cell, so a writer puts a
// command below its table.
func Command(s string) string {
	return span(terminal.Escape(s))
}

// Prose renders s as Text, except that each of commands found in it (a
// replay, an arbitrate command the sentence names) is rendered by Command:
// a sentence that tells a reader to run something shows the command as
// a code span that copies byte for byte, never escaped. Where two
// commands start at one place the longer wins. Not for a table cell.
func Prose(s string, commands ...string) string {
	var b strings.Builder
	for s != "" {
		at, cmd := -1, ""
		for _, c := range commands {
			if c == "" {
				continue
			}
			if i := strings.Index(s, c); i >= 0 && (at < 0 || i < at || i == at && len(c) > len(cmd)) {
				at, cmd = i, c
			}
		}
		if at < 0 {
			b.WriteString(Text(s))
			break
		}
		if at > 0 {
			b.WriteString(Text(s[:at]))
		}
		b.WriteString(Command(cmd))
		s = s[at+len(cmd):]
	}
	return b.String()
}

// span fences s as a code span: by one backtick more than the longest run
// of backticks it holds, padded with a space on each side (which
// CommonMark strips) when it starts or ends with a backtick or a space, so
// the span's content is s exactly. Empty for an empty s.
func span(s string) string {
	if s == "" {
		return ""
	}
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		// A backtick beside the fence would lengthen it; CommonMark
		// strips one space from each side.
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// CellCode is Code for a table cell: the same code span, with each pipe
// escaped so that it does not end the cell (GitHub's tables read "\|"
// inside a code span as a pipe).
func CellCode(s string) string {
	return strings.ReplaceAll(Code(s), "|", "\\|")
}

// List renders a list of items for one table cell or line: each item
// escaped as Text, joined by ", ".
func List(xs []string) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = Text(x)
	}
	return strings.Join(out, ", ")
}

// Block renders text of several lines (a test's output) as a fenced code
// block: its lines kept, each line's control characters shown as Go
// escapes, the fence longer than any run of backticks or tildes inside,
// so nothing in it ends the block early. It ends with a newline.
func Block(s string, maxBytes int) string {
	s = Clip(terminal.Lines(strings.TrimRight(s, "\n")), maxBytes)
	longest := 0
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimLeft(l, " ")
		n := len(l) - len(strings.TrimLeft(l, "`~"))
		longest = max(longest, n)
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + "\n" + s + "\n" + fence + "\n"
}

// Clip cuts s to n bytes at a rune boundary, marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
