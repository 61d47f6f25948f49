package faultrecord

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// decodeRecord decodes one record file into r (reset first). It exists because verification
// of 100k records must take well under 2 s and encoding/json spends most of its time
// validating and reflecting; this decoder makes one pass, allocates only the strings it keeps,
// and falls back to encoding/json for the rare string with escapes or invalid UTF-8.
//
// It accepts a subset of what encoding/json accepts, with the same values, so it never reads
// as valid what the reference decoder would reject (FuzzDecodeRecord checks this). The one
// deliberate difference: keys match the schema's spelling exactly, where encoding/json would
// also match "Surface" or "SURFACE" to surface. Everything else is the same: the whole input
// must be one JSON value with nothing after it, unknown keys are skipped (but must be valid
// JSON), null leaves a field unset, a later duplicate key wins, a seed must be an integer that
// fits in int64, and times are RFC 3339 strings as time.Time.UnmarshalJSON reads them.
func decodeRecord(data []byte, r *Record) error {
	*r = Record{}
	d := decoder{data: data}
	d.skipSpace()
	if d.eof() {
		return errUnexpectedEOF
	}
	switch d.data[d.pos] {
	case '{':
	case 'n':
		if err := d.literal("null"); err != nil {
			return err
		}
		return d.end()
	default:
		return fmt.Errorf("a record is a JSON object, found %s", d.describe())
	}
	d.pos++
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) { // no allocation: the compiler compares bytes
		case "schema":
			err = d.stringInto(&r.Schema)
		case "run_id":
			err = d.stringInto(&r.RunID)
		case "test":
			err = d.stringInto(&r.Test)
		case "package":
			err = d.stringInto(&r.Package)
		case "surface":
			err = d.stringInto(&r.Surface)
		case "class":
			err = d.stringInto(&r.Class)
		case "leg":
			err = d.stringInto(&r.Leg)
		case "replay":
			err = d.stringInto(&r.Replay)
		case "seed":
			err = d.int64Into(&r.Seed)
		case "armed":
			err = d.boolInto(&r.Armed)
		case "fired":
			err = d.boolInto(&r.Fired)
		case "test_failed":
			err = d.boolInto(&r.TestFailed)
		case "armed_at":
			err = d.timeInto(&r.ArmedAt)
		case "fired_at":
			err = d.timeInto(&r.FiredAt)
		case "evidence":
			err = d.evidenceInto(&r.Evidence)
		case "oracles":
			// Rare and small: validate with the skipper, decode the span
			// with encoding/json so the semantics are the reference's.
			start := d.pos
			if err = d.skipValue(1); err == nil {
				r.Oracles = nil
				err = json.Unmarshal(d.data[start:d.pos], &r.Oracles)
			}
		case "schedule":
			// Small, one per record: decoded like oracles, into the value a
			// duplicate key left, as encoding/json merges into a pointer.
			start := d.pos
			if err = d.skipValue(1); err == nil {
				err = json.Unmarshal(d.data[start:d.pos], &r.Schedule)
			}
		default:
			return d.skipValue(1)
		}
		if err != nil {
			return fmt.Errorf("field %s: %w", key, err)
		}
		return nil
	}, 1)
	if err != nil {
		return err
	}
	return d.end()
}

// errUnexpectedEOF has encoding/json's wording so that a truncated file reads the same
// whichever decoder saw it.
var errUnexpectedEOF = errors.New("unexpected end of JSON input")

// maxDepth bounds nesting in skipped values, as encoding/json does.
const maxDepth = 10000

type decoder struct {
	data []byte
	pos  int
}

func (d *decoder) eof() bool { return d.pos >= len(d.data) }

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) describe() string {
	if d.eof() {
		return "end of input"
	}
	return fmt.Sprintf("%q at offset %d", d.data[d.pos], d.pos)
}

// end checks that nothing but white space follows the top-level value.
func (d *decoder) end() error {
	d.skipSpace()
	if !d.eof() {
		return fmt.Errorf("invalid character %s after top-level value", d.describe())
	}
	return nil
}

// object reads the members of an object whose '{' was consumed, calling member with each key
// (unescaped) positioned at the start of its value. member must consume the value.
func (d *decoder) object(member func(key []byte) error, depth int) error {
	if depth > maxDepth {
		return errors.New("exceeded max depth")
	}
	d.skipSpace()
	if d.eof() {
		return errUnexpectedEOF
	}
	if d.data[d.pos] == '}' {
		d.pos++
		return nil
	}
	for {
		d.skipSpace()
		if d.eof() {
			return errUnexpectedEOF
		}
		if d.data[d.pos] != '"' {
			return fmt.Errorf("invalid character %s looking for beginning of object key string", d.describe())
		}
		raw, escaped, err := d.scanString()
		if err != nil {
			return err
		}
		key := raw[1 : len(raw)-1]
		if escaped {
			s, err := unquote(raw)
			if err != nil {
				return err
			}
			key = []byte(s)
		}
		d.skipSpace()
		if d.eof() {
			return errUnexpectedEOF
		}
		if d.data[d.pos] != ':' {
			return fmt.Errorf("invalid character %s after object key", d.describe())
		}
		d.pos++
		d.skipSpace()
		if d.eof() {
			return errUnexpectedEOF
		}
		if err := member(key); err != nil {
			return err
		}
		d.skipSpace()
		if d.eof() {
			return errUnexpectedEOF
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return nil
		default:
			return fmt.Errorf("invalid character %s after object key:value pair", d.describe())
		}
	}
}

// scanString scans a string literal starting at '"' and returns it with its quotes, and
// whether it holds an escape. Escapes are validated here; control characters are refused.
func (d *decoder) scanString() (raw []byte, escaped bool, err error) {
	start := d.pos
	i := d.pos + 1
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return d.data[start:d.pos], escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(d.data) {
				return nil, false, errUnexpectedEOF
			}
			switch d.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d.data) {
					return nil, false, errUnexpectedEOF
				}
				for _, h := range d.data[i+2 : i+6] {
					if !isHex(h) {
						return nil, false, fmt.Errorf("invalid character %q in \\u hexadecimal character escape", h)
					}
				}
				i += 6
			default:
				return nil, false, fmt.Errorf("invalid character %q in string escape code", d.data[i+1])
			}
		case c < 0x20:
			return nil, false, fmt.Errorf("invalid character %q in string literal", c)
		default:
			i++
		}
	}
	return nil, false, errUnexpectedEOF
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// unquote decodes a validated string literal the way encoding/json does (escapes, surrogate
// pairs, invalid UTF-8 replaced by U+FFFD), by asking encoding/json: this is the rare path.
func unquote(raw []byte) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return s, nil
}

// stringInto reads a string (or null, which leaves *dst alone).
func (d *decoder) stringInto(dst *string) error {
	switch d.data[d.pos] {
	case '"':
	case 'n':
		return d.literal("null")
	default:
		return fmt.Errorf("want a string, found %s", d.describe())
	}
	raw, escaped, err := d.scanString()
	if err != nil {
		return err
	}
	body := raw[1 : len(raw)-1]
	if !escaped && utf8.Valid(body) {
		*dst = string(body)
		return nil
	}
	s, err := unquote(raw)
	if err != nil {
		return err
	}
	*dst = s
	return nil
}

func (d *decoder) boolInto(dst *bool) error {
	switch d.data[d.pos] {
	case 't':
		if err := d.literal("true"); err != nil {
			return err
		}
		*dst = true
		return nil
	case 'f':
		if err := d.literal("false"); err != nil {
			return err
		}
		*dst = false
		return nil
	case 'n':
		return d.literal("null")
	}
	return fmt.Errorf("want true or false, found %s", d.describe())
}

func (d *decoder) int64Into(dst *int64) error {
	c := d.data[d.pos]
	if c == 'n' {
		return d.literal("null")
	}
	if c != '-' && (c < '0' || c > '9') {
		return fmt.Errorf("want an integer, found %s", d.describe())
	}
	num, err := d.scanNumber()
	if err != nil {
		return err
	}
	v, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		return fmt.Errorf("number %s is not an int64", num)
	}
	*dst = v
	return nil
}

// timeInto reads an RFC 3339 string exactly as time.Time.UnmarshalJSON does, which is what
// encoding/json calls (on the raw literal, escapes included).
func (d *decoder) timeInto(dst *time.Time) error {
	switch d.data[d.pos] {
	case '"':
	case 'n':
		return d.literal("null")
	default:
		return fmt.Errorf("want an RFC 3339 time string, found %s", d.describe())
	}
	raw, _, err := d.scanString()
	if err != nil {
		return err
	}
	return dst.UnmarshalJSON(raw)
}

func (d *decoder) evidenceInto(ev *Evidence) error {
	switch d.data[d.pos] {
	case '{':
	case 'n':
		return d.literal("null")
	default:
		return fmt.Errorf("want an object, found %s", d.describe())
	}
	d.pos++
	return d.object(func(key []byte) error {
		switch string(key) {
		case "injector":
			return d.stringInto(&ev.Injector)
		case "victim":
			return d.stringInto(&ev.Victim)
		}
		return d.skipValue(2)
	}, 2)
}

func (d *decoder) literal(lit string) error {
	end := d.pos + len(lit)
	if end > len(d.data) {
		if string(d.data[d.pos:]) == lit[:len(d.data)-d.pos] {
			return errUnexpectedEOF
		}
		return fmt.Errorf("invalid literal at offset %d", d.pos)
	}
	if string(d.data[d.pos:end]) != lit {
		return fmt.Errorf("invalid literal at offset %d", d.pos)
	}
	d.pos = end
	return nil
}

// scanNumber scans a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) scanNumber() ([]byte, error) {
	start := d.pos
	i := d.pos
	n := len(d.data)
	if i < n && d.data[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < n && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
		return i - j
	}
	if i >= n {
		return nil, errUnexpectedEOF
	}
	switch {
	case d.data[i] == '0':
		i++
	case d.data[i] >= '1' && d.data[i] <= '9':
		digits()
	default:
		return nil, fmt.Errorf("invalid character %q in numeric literal", d.data[i])
	}
	if i < n && d.data[i] == '.' {
		i++
		if i >= n {
			return nil, errUnexpectedEOF
		}
		if digits() == 0 {
			return nil, fmt.Errorf("invalid character %q after decimal point in numeric literal", d.data[i])
		}
	}
	if i < n && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < n && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if i >= n {
			return nil, errUnexpectedEOF
		}
		if digits() == 0 {
			return nil, fmt.Errorf("invalid character %q in exponent of numeric literal", d.data[i])
		}
	}
	d.pos = i
	return d.data[start:i], nil
}

// skipValue validates and skips any JSON value: what an unknown field holds.
func (d *decoder) skipValue(depth int) error {
	if depth > maxDepth {
		return errors.New("exceeded max depth")
	}
	if d.eof() {
		return errUnexpectedEOF
	}
	switch c := d.data[d.pos]; {
	case c == '"':
		_, _, err := d.scanString()
		return err
	case c == '{':
		d.pos++
		return d.object(func([]byte) error { return d.skipValue(depth + 1) }, depth+1)
	case c == '[':
		// The array is one level below depth, as encoding/json counts:
		// an empty one at the limit is as deep as a full one.
		if depth+1 > maxDepth {
			return errors.New("exceeded max depth")
		}
		d.pos++
		d.skipSpace()
		if d.eof() {
			return errUnexpectedEOF
		}
		if d.data[d.pos] == ']' {
			d.pos++
			return nil
		}
		for {
			d.skipSpace()
			if err := d.skipValue(depth + 1); err != nil {
				return err
			}
			d.skipSpace()
			if d.eof() {
				return errUnexpectedEOF
			}
			switch d.data[d.pos] {
			case ',':
				d.pos++
			case ']':
				d.pos++
				return nil
			default:
				return fmt.Errorf("invalid character %s after array element", d.describe())
			}
		}
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		_, err := d.scanNumber()
		return err
	}
	return fmt.Errorf("invalid character %s looking for beginning of value", d.describe())
}
