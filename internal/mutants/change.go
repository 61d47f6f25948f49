package mutants

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
	"strings"
)

// swaps are gremlins' token swaps by mutation type (v0.6.0,
// internal/engine/mappings.go): the token in the source and what the
// mutation turns it into.
var swaps = map[string]map[string]string{
	"ARITHMETIC_BASE":         {"+": "-", "*": "/", "/": "*", "%": "*", "-": "+"},
	"CONDITIONALS_BOUNDARY":   {">=": ">", ">": ">=", "<=": "<", "<": "<="},
	"CONDITIONALS_NEGATION":   {"==": "!=", ">=": "<", ">": "<=", "<=": ">", "<": ">=", "!=": "=="},
	"INCREMENT_DECREMENT":     {"--": "++", "++": "--"},
	"INVERT_ASSIGNMENTS":      {"+=": "-=", "*=": "/=", "/=": "*=", "%=": "%=", "-=": "+="},
	"INVERT_BITWISE":          {"&": "|", "|": "&", "^": "&", "&^": "&", "<<": ">>", ">>": "<<"},
	"INVERT_BWASSIGN":         {"&=": "|=", "|=": "&=", "^=": "&=", "&^=": "&=", "<<=": ">>=", ">>=": "<<="},
	"INVERT_LOGICAL":          {"&&": "||", "||": "&&"},
	"INVERT_LOOPCTRL":         {"break": "continue", "continue": "break"},
	"INVERT_NEGATIVES":        {"-": "+"},
	"REMOVE_SELF_ASSIGNMENTS": {"+=": "=", "&=": "=", "&^=": "=", "*=": "=", "|=": "=", "/=": "=", "%=": "=", "<<=": "=", ">>=": "=", "-=": "=", "^=": "="},
}

// describe fills in m's Code (the source line) and Change (the token swap)
// from the module's source: src is the file's content.
func describe(m *Mutant, src []byte) {
	lines := bytes.Split(src, []byte("\n"))
	if m.Line > len(lines) {
		return
	}
	line := string(lines[m.Line-1])
	m.Code = strings.TrimSpace(line)
	if m.Column > len(line) {
		return
	}
	at := line[m.Column-1:]
	from := slices.Collect(maps.Keys(swaps[m.Mutation]))
	// The longest token first: at "<=", "<" must not win.
	slices.SortFunc(from, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), cmp.Compare(a, b)) })
	for _, tok := range from {
		if strings.HasPrefix(at, tok) {
			m.Change = "`" + tok + "` → `" + swaps[m.Mutation][tok] + "`"
			return
		}
	}
}
