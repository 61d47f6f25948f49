package faultrecord

import (
	"strings"
	"testing"
)

// TestDecodeRecordAtTheEdges holds the decoder to encoding/json where the
// seed corpus did not reach: every hex digit at the ends of its ranges in
// a \u escape (0 9 a f A F), the digits 0 and 9 starting a seed, input
// that ends inside an escape or right after a backslash, and nesting at
// encoding/json's depth limit, below it and above it.
func TestDecodeRecordAtTheEdges(t *testing.T) {
	inputs := []string{
		`{"surface":"\u0009\u00af\u00AF\u004a\u004A\u00fF"}`,
		`{"surface":"\u0030\u0039\u0061\u0066\u0041\u0046"}`,
		`{"surface":"\u00g0"}`, `{"surface":"\u00G0"}`, `{"surface":"\u00/0"}`, `{"surface":"\u00:0"}`,
		`{"surface":"\u00` + "`" + `0"}`, `{"surface":"\u00@0"}`,
		`{"seed":0}`, `{"seed":9}`, `{"seed":-9}`, `{"seed":90}`,
		`{"surface":"\`, `{"surface":"\u`, `{"surface":"\u12`, `{"surface":"\u1234`, `{"surface":"\u00zz`,
		`{"armed":tru`, `{"armed":fals`, `{"armed":nul`, `nul`, `nulx`, `null`,
		// Numbers an unknown key holds are only skipped: their syntax is all
		// that is checked.
		`{"x":0}`, `{"x":9}`, `{"x":-0.0e-0}`, `{"x":1.5}`, `{"x":1e3}`, `{"x":1E+3}`, `{"x":1e-3}`, `{"x":10.25E9}`,
		`{"x":1.}`, `{"x":1.e5}`, `{"x":1.x}`, `{"x":1e}`, `{"x":1e+}`, `{"x":1ex}`, `{"x":-}`, `{"x":-x}`, `{"x":01}`, `{"x":+1}`,
		`{"x":-`, `{"x":1.`, `{"x":1e`, `{"x":1e+`, `{"x":1e-`, `{"x":[1.}`,
	}
	// Nesting around encoding/json's limit of 10000 containers: arrays
	// around nothing, an empty object or a number, and objects, under the
	// record, under evidence and under an unknown object.
	for _, n := range []int{9997, 9998, 9999, 10000} {
		for _, f := range []string{`{"x":%s}`, `{"evidence":{"x":%s}}`, `{"x":{"y":%s}}`} {
			for _, nest := range []string{
				strings.Repeat("[", n) + strings.Repeat("]", n),
				strings.Repeat("[", n) + "{}" + strings.Repeat("]", n),
				strings.Repeat("[", n) + "0" + strings.Repeat("]", n),
				strings.Repeat(`{"a":`, n) + "0" + strings.Repeat("}", n),
			} {
				inputs = append(inputs, strings.Replace(f, "%s", nest, 1))
			}
		}
	}
	for _, in := range inputs {
		checkAgainstEncodingJSON(t, []byte(in))
	}
}

// TestDecodeRecordErrorsNameWhatIsWrong: where encoding/json names the
// byte that is wrong or the end of the input, decodeRecord says the same,
// so a reader of a refused record learns the same thing from either.
func TestDecodeRecordErrorsNameWhatIsWrong(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`{"surface":"\x"}`, `invalid character 'x' in string escape code`},
		{`{"surface":"\u00zz`, `invalid character 'z' in \u hexadecimal character escape`},
		{`{"surface":"\u00zz"}`, `invalid character 'z' in \u hexadecimal character escape`},
		{`{"surface":"\u12`, `unexpected end of JSON input`},
		{`{"surface":"\`, `unexpected end of JSON input`},
		{`{"armed":tru`, `unexpected end of JSON input`},
		{`{"armed":nul`, `unexpected end of JSON input`},
		{`nul`, `unexpected end of JSON input`},
		{`{"seed":-`, `unexpected end of JSON input`},
	}
	for _, tt := range tests {
		var r Record
		if err := decodeRecord([]byte(tt.in), &r); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("decodeRecord(%q) = %v, want an error saying %q", tt.in, err, tt.want)
		}
	}
}
