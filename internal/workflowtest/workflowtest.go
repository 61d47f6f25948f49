// Package workflowtest is a model of how a GitHub Actions runner reads
// workflow commands from a step's output, for tests: what would a job's
// log act on? It follows the runner's rules (actions/runner,
// ActionCommandManager and ActionCommand): a line ends at a newline, a
// carriage return or both; "::name props::data" is a command when it
// starts the line after any whitespace; the legacy "##[name props]data"
// is one anywhere in the line; either only for a command the runner
// knows, its name in any case; "::stop-commands::TOKEN" stops every
// command until a line "::TOKEN::".
package workflowtest

import (
	"strings"
	"unicode"
)

// Command is one workflow command the runner would act on.
type Command struct {
	Name  string
	Props string
	Data  string
	// Line is the line it was read from.
	Line string
}

// known are the commands a runner acts on.
var known = []string{"set-env", "set-output", "save-state", "add-mask", "add-path", "add-matcher", "remove-matcher",
	"debug", "warning", "error", "notice", "group", "endgroup", "echo", "stop-commands"}

// Lines splits log as the runner reads it: at "\r\n", "\r" or "\n".
func Lines(log string) []string {
	log = strings.ReplaceAll(log, "\r\n", "\n")
	return strings.FieldsFunc(log, func(r rune) bool { return r == '\n' || r == '\r' })
}

// Commands returns the commands the runner would act on in log, in order,
// without the stop-commands blocks' own lines.
func Commands(log string) []Command {
	var out []Command
	token := ""
	for _, line := range Lines(log) {
		c, ok := parse(line, token)
		if !ok {
			continue
		}
		switch {
		case token != "":
			if strings.EqualFold(c.Name, token) {
				token = ""
			}
		case strings.EqualFold(c.Name, "stop-commands") && c.Data != "":
			token = c.Data
		default:
			out = append(out, c)
		}
	}
	return out
}

// Stopped reports whether log ends with commands stopped: a
// stop-commands block that was never ended.
func Stopped(log string) bool {
	token := ""
	for _, line := range Lines(log) {
		c, ok := parse(line, token)
		switch {
		case !ok:
		case token != "":
			if strings.EqualFold(c.Name, token) {
				token = ""
			}
		case strings.EqualFold(c.Name, "stop-commands") && c.Data != "":
			token = c.Data
		}
	}
	return token != ""
}

// parse reads line as a command, of either form, when its name is one the
// runner knows (or token, the open block's).
func parse(line, token string) (Command, bool) {
	if v2 := strings.TrimLeftFunc(line, unicode.IsSpace); strings.HasPrefix(v2, "::") {
		if end := strings.Index(v2[2:], "::"); end >= 0 {
			info := v2[2 : 2+end]
			name, props, _ := strings.Cut(info, " ")
			if isKnown(name, token) {
				return Command{Name: name, Props: props, Data: v2[2+end+2:], Line: line}, true
			}
		}
	}
	if i := strings.Index(line, "##["); i >= 0 {
		if j := strings.IndexByte(line[i:], ']'); j >= 0 {
			info := line[i+3 : i+j]
			name, props, _ := strings.Cut(info, " ")
			if isKnown(name, token) {
				return Command{Name: name, Props: props, Data: line[i+j+1:], Line: line}, true
			}
		}
	}
	return Command{}, false
}

func isKnown(name, token string) bool {
	if token != "" && strings.EqualFold(name, token) {
		return true
	}
	for _, k := range known {
		if strings.EqualFold(name, k) {
			return true
		}
	}
	return false
}
