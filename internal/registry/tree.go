package registry

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// This file turns a TOML document into a small tree of values that remember
// where they were written. go-toml's decoder knows positions only for the
// first error it meets and for unknown fields; the registry needs a position
// for every value (a surface's line, the exact lever that is unknown, both
// lines of a duplicate id) and wants to report every problem in one pass. So
// the decoder is used only to prove the document is valid TOML (it catches
// syntax errors, duplicate keys and table redefinitions, with positions), and
// the tree is built from go-toml's position-carrying parser.

// pos is a 1-based line and column in the registry file.
type pos struct{ line, col int }

// value is a TOML value with its position.
type value struct {
	kind unstable.Kind // a scalar kind, Array, Table (any table) or ArrayTable
	// at is where the value is named: the start of its key, the element in
	// an array, or the start of the [header] line for tables.
	at pos
	// valueAt is where the value itself starts (the same as at for tables
	// opened by a header).
	valueAt pos
	text    string   // a String's decoded text; the raw text of other scalars
	items   []*value // elements of an Array, tables of an ArrayTable
	keys    []string // a table's keys in document order
	fields  map[string]*value
}

func newTable(at pos) *value {
	return &value{kind: unstable.Table, at: at, valueAt: at, fields: map[string]*value{}}
}

func (v *value) isTable() bool { return v.kind == unstable.Table }

// isTableArray is true for [[x]] arrays and for arrays whose elements are
// all inline tables (x = [{...}, {...}]), which TOML treats alike.
func (v *value) isTableArray() bool {
	if v.kind == unstable.ArrayTable {
		return true
	}
	if v.kind != unstable.Array || len(v.items) == 0 {
		return false
	}
	for _, it := range v.items {
		if !it.isTable() {
			return false
		}
	}
	return true
}

func (v *value) set(key string, child *value) {
	if _, ok := v.fields[key]; !ok {
		v.keys = append(v.keys, key)
	}
	v.fields[key] = child
}

// describe names a value's type for error messages ("not a string").
func (v *value) describe() string {
	switch v.kind {
	case unstable.String:
		return "a string"
	case unstable.Integer:
		return "an integer"
	case unstable.Float:
		return "a float"
	case unstable.Bool:
		return "a boolean"
	case unstable.Array:
		return "an array"
	case unstable.ArrayTable:
		return "an array of tables"
	case unstable.Table:
		return "a table"
	default:
		return "a date or time"
	}
}

// keyPart is one part of a possibly dotted key.
type keyPart struct {
	name string
	at   pos
}

type treeBuilder struct {
	p    unstable.Parser
	data []byte
	// lineStarts[i] is the offset of line i+1. Positions are computed from
	// it rather than with Parser.Shape, which rescans the document from the
	// start for every node.
	lineStarts []int
}

// parseTree checks that data is valid TOML and returns its positioned tree.
// A syntax error comes back as a single *Error with go-toml's position.
func parseTree(file string, data []byte) (*value, *Error) {
	var probe map[string]any
	if err := toml.Unmarshal(data, &probe); err != nil {
		return nil, syntaxError(file, err)
	}
	b := &treeBuilder{data: data, lineStarts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			b.lineStarts = append(b.lineStarts, i+1)
		}
	}
	b.p.Reset(data)
	root := newTable(pos{1, 1})
	current := root
	for b.p.NextExpression() {
		e := b.p.Expression()
		switch e.Kind {
		case unstable.Table:
			parts := b.key(e)
			t := b.descend(root, parts)
			t.at = b.headerPos(parts[0].at)
			t.valueAt = t.at
			current = t
		case unstable.ArrayTable:
			parts := b.key(e)
			parent := b.descend(root, parts[:len(parts)-1])
			last := parts[len(parts)-1]
			header := b.headerPos(parts[0].at)
			arr := parent.fields[last.name]
			if arr == nil {
				arr = &value{kind: unstable.ArrayTable, at: header, valueAt: header}
				parent.set(last.name, arr)
			}
			t := newTable(header)
			arr.items = append(arr.items, t)
			current = t
		case unstable.KeyValue:
			b.keyValue(current, e)
		}
	}
	if err := b.p.Error(); err != nil {
		// Unreachable when the decoder accepted the document, but a parser
		// disagreement must still come out as a positioned error.
		return nil, b.parserError(file, err)
	}
	return root, nil
}

// keyValue stores one key = value (dotted keys create implicit tables).
func (b *treeBuilder) keyValue(t *value, kv *unstable.Node) {
	parts := b.key(kv)
	dst := b.descend(t, parts[:len(parts)-1])
	last := parts[len(parts)-1]
	dst.set(last.name, b.value(kv.Value(), last.at))
}

// value converts one value node; at is where its key (or element) starts.
func (b *treeBuilder) value(n *unstable.Node, at pos) *value {
	switch n.Kind {
	case unstable.Array:
		v := &value{kind: unstable.Array, at: at, valueAt: at}
		it := n.Children()
		for it.Next() {
			c := it.Node()
			if c.Kind == unstable.Comment {
				continue
			}
			elemAt := at
			if c.Kind != unstable.Array { // nested arrays carry no range
				elemAt = b.pos(c.Raw)
			}
			v.items = append(v.items, b.value(c, elemAt))
		}
		return v
	case unstable.InlineTable:
		t := newTable(at)
		t.valueAt = b.pos(n.Raw)
		it := n.Children()
		for it.Next() {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				b.keyValue(t, c)
			}
		}
		return t
	default:
		return &value{kind: n.Kind, at: at, valueAt: b.pos(n.Raw), text: string(n.Data)}
	}
}

// descend walks (creating implicit tables) along key parts; a part that
// names an array of tables continues in its last table, as TOML specifies.
func (b *treeBuilder) descend(t *value, parts []keyPart) *value {
	for _, part := range parts {
		child := t.fields[part.name]
		switch {
		case child == nil:
			child = newTable(part.at)
			t.set(part.name, child)
		case child.kind == unstable.ArrayTable && len(child.items) > 0:
			child = child.items[len(child.items)-1]
		}
		t = child
	}
	return t
}

func (b *treeBuilder) key(n *unstable.Node) []keyPart {
	var parts []keyPart
	it := n.Key()
	for it.Next() {
		k := it.Node()
		parts = append(parts, keyPart{name: string(k.Data), at: b.pos(k.Raw)})
	}
	return parts
}

// pos is the 1-based line and byte column where r starts.
func (b *treeBuilder) pos(r unstable.Range) pos {
	off := int(r.Offset)
	line, _ := slices.BinarySearch(b.lineStarts, off+1) // first line starting after off
	return pos{line, off - b.lineStarts[line-1] + 1}
}

// headerPos is the start of the [header] whose first key part is at keyAt:
// the first non-blank character of that line, where the bracket is.
func (b *treeBuilder) headerPos(keyAt pos) pos {
	lineStart := b.lineStarts[keyAt.line-1]
	col := 1
	for i := lineStart; i < len(b.data) && (b.data[i] == ' ' || b.data[i] == '\t'); i++ {
		col++
	}
	return pos{keyAt.line, col}
}

func (b *treeBuilder) parserError(file string, err error) *Error {
	e := &Error{File: file, Msg: "invalid TOML: " + err.Error(), Kind: ErrInvalid}
	var perr *unstable.ParserError
	if errors.As(err, &perr) && perr.Highlight != nil {
		at := b.pos(b.p.Range(perr.Highlight))
		e.Line, e.Column = at.line, at.col
	}
	return e
}

// syntaxError turns a go-toml decode error into a positioned problem.
func syntaxError(file string, err error) *Error {
	e := &Error{File: file, Kind: ErrInvalid}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		e.Line, e.Column = de.Position()
		e.Msg = fmt.Sprintf("invalid TOML: %s; fix the syntax (the file must be valid TOML before anything else is checked)",
			strings.TrimPrefix(de.Error(), "toml: "))
		return e
	}
	e.Msg = "invalid TOML: " + strings.TrimPrefix(err.Error(), "toml: ")
	return e
}
