package contested

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// fatalTB records the first Fatalf and stops the goroutine, as testing
// does; anything else it is asked panics (its embedded TB is nil), which
// the test reports as Start going past the check.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// startFatal runs Start with opts on a fatalTB and returns what it failed
// with, or why it did not fail at once.
func startFatal(opts ...Option) (fatal string) {
	tb := &fatalTB{}
	done := make(chan string)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Sprintf("Start did not refuse the span and went on (%v)", r)
				return
			}
			done <- tb.fatal
		}()
		Start(tb, "no.such.surface", Reset, opts...)
	}()
	return <-done
}

func TestSpan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []Option
		wants []string
	}{
		{"a zero span is refused, saying what to pass", []Option{Span(0)}, []string{"Span(0)", "pass the number of Step or Progress calls", "leave Span out for the default of 600"}},
		{"a negative span is refused", []Option{Span(-5)}, []string{"Span(-5)", "at least 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := startFatal(tc.opts...)
			for _, w := range tc.wants {
				if !strings.Contains(got, w) {
					t.Errorf("Start failed with %q, want it to say %q", got, w)
				}
			}
		})
	}
	for _, tc := range []struct {
		name string
		o    options
	}{
		{"no span given is the default, not an error", options{}},
		{"a span of one step is accepted", options{span: 1, spanSet: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkSpan(tc.o); err != nil {
				t.Errorf("checkSpan(%+v) = %v, want nil", tc.o, err)
			}
		})
	}
}
