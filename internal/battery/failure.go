package battery

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/contested/contested/internal/capability"
)

// failureText is a failing test's failure, from what it printed:
//
//   - what it reported through t.Error and t.Fatal, when test2json marked
//     those lines (reported; Go 1.27's test2json does, Go 1.26's does not);
//   - else its messages read against the lines of source that printed them
//     (sources, the package's directory): a message printed by a call of
//     Error, Errorf, Fatal, Fatalf, Fail or FailNow is a failure, one
//     printed by Log or Logf never is, and one printed through a helper
//     (t.Helper: the line is the helper's call) is a failure only when no
//     message is known to be one;
//   - else the panic that ended it.
//
// It is empty when none of these says anything; a reader then falls back
// on the output's first line.
func failureText(reported, output string, sources *sourceLines, dir string) string {
	if s := strings.TrimSpace(reported); s != "" {
		return dedent(s)
	}
	var failed, helped []string
	for _, m := range messages(output) {
		switch sources.kind(dir, m.file, m.line) {
		case callFailure:
			failed = append(failed, m.text)
		case callOther:
			if !strings.Contains(m.text, "contested: leg ") {
				helped = append(helped, m.text)
			}
		}
	}
	switch {
	case len(failed) > 0:
		return strings.Join(failed, "\n")
	case len(helped) > 0:
		return strings.Join(helped, "\n")
	}
	if i := strings.Index(output, "panic: "); i >= 0 {
		lines := strings.SplitN(output[i:], "\n", 3)
		return strings.TrimSpace(strings.Join(lines[:min(len(lines), 2)], "\n"))
	}
	return ""
}

// message is one message a test printed: "file.go:12: text", with the
// lines that continue it.
type message struct {
	file string
	line int
	text string
}

// messageRe is the first line of a message as the testing package prints
// it: indented, then file:line: text.
var messageRe = regexp.MustCompile(`^\s+([^\s:]+\.go):(\d+): ?(.*)$`)

// messages splits a test's output into its messages. A line more indented
// than a message's first, without a file:line of its own, continues it
// (t.Error("a\nb") prints b on a line of its own).
func messages(output string) []message {
	var out []message
	indent := -1
	for _, l := range strings.Split(output, "\n") {
		if m := messageRe.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			out = append(out, message{file: m[1], line: n, text: m[1] + ":" + m[2] + ": " + m[3]})
			indent = len(l) - len(strings.TrimLeft(l, " \t"))
			continue
		}
		if len(out) > 0 && indent >= 0 && len(l)-len(strings.TrimLeft(l, " \t")) > indent && strings.TrimSpace(l) != "" {
			out[len(out)-1].text += "\n" + strings.TrimSpace(l)
			continue
		}
		indent = -1
	}
	return out
}

// callKind is what the line of source that printed a message calls.
type callKind int

const (
	callUnknown callKind = iota // the source could not be read
	callLog                     // t.Log, t.Logf
	callFailure                 // t.Error, t.Errorf, t.Fatal, t.Fatalf, t.Fail, t.FailNow
	callOther                   // anything else: a helper that reports through t.Helper
)

var (
	failureCall = regexp.MustCompile(`\.(Error|Errorf|Fatal|Fatalf|Fail|FailNow)\(`)
	logCall     = regexp.MustCompile(`\.(Log|Logf)\(`)
)

// sourceLines reads test sources once per file, for a battery's failures.
type sourceLines struct {
	mu    sync.Mutex
	files map[string][][]byte
}

// kind reads line n of file in dir and says what it calls.
func (s *sourceLines) kind(dir, file string, n int) callKind {
	if s == nil || dir == "" || filepath.Base(file) != file {
		return callUnknown
	}
	path := filepath.Join(dir, file)
	s.mu.Lock()
	if s.files == nil {
		s.files = map[string][][]byte{}
	}
	lines, ok := s.files[path]
	if !ok {
		if b, err := os.ReadFile(path); err == nil && len(b) < 4<<20 {
			lines = bytes.Split(b, []byte("\n"))
		}
		s.files[path] = lines
	}
	s.mu.Unlock()
	if n < 1 || n > len(lines) {
		return callUnknown
	}
	src := lines[n-1]
	switch {
	case failureCall.Match(src):
		return callFailure
	case logCall.Match(src):
		return callLog
	default:
		return callOther
	}
}

// dedent trims the indentation go test puts before a test's messages.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}

// missingCapabilities are the capabilities a test's output says it lacked.
func missingCapabilities(out string) []string {
	var names []string
	for _, n := range capability.FromOutput(out) {
		names = append(names, string(n))
	}
	return names
}
