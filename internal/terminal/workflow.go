package terminal

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"sync"
)

// A runner of GitHub Actions reads every line a step prints as a possible
// workflow command: a line that starts with "::" (after any spaces) adds
// an annotation, a mask, a group, an output. Text from the code under test
// printed on its own line would speak for the runner. The runner's own
// remedy for untrusted output is to stop reading commands:
// "::stop-commands::TOKEN" turns them off until a line "::TOKEN::". Guard
// wraps what a command prints in such blocks, each with a fresh token that
// nothing printed inside could have guessed, and lets the command's own
// annotations out between them (Outside).

// Guard is a writer that, when on, wraps everything written through it in
// stop-commands blocks. A block opens at the first write and stays open
// until Outside or Close; the next write opens a new one with a new token.
// Off, it passes writes through unchanged. It is safe for concurrent use.
type Guard struct {
	mu sync.Mutex
	w  io.Writer
	on bool
	// token is the open block's; "" when none is open.
	token string
	// midLine: the last byte written inside the block was not a newline.
	midLine bool
	opened  func(token string)
	closed  func(token string)
	err     error
}

// A GuardOption configures a Guard.
type GuardOption func(*Guard)

// OnBlock calls opened with each block's token as it opens and closed as
// it ends, so that a process watching this one (the worker's supervisor)
// can end a block left open when this one is killed.
func OnBlock(opened, closed func(token string)) GuardOption {
	return func(g *Guard) { g.opened, g.closed = opened, closed }
}

// NewGuard returns a Guard writing to w, on when on is true (under GitHub
// Actions: see GitHubActions).
func NewGuard(w io.Writer, on bool, opts ...GuardOption) *Guard {
	g := &Guard{w: w, on: on}
	for _, o := range opts {
		o(g)
	}
	return g
}

// GitHubActions reports whether getenv (os.Getenv) says the process runs
// under GitHub Actions, whose runner reads workflow commands from output.
func GitHubActions(getenv func(string) string) bool {
	return getenv("GITHUB_ACTIONS") == "true"
}

// Unwrap returns the writer underneath, for callers that decide on colour
// by what the final writer is.
func (g *Guard) Unwrap() io.Writer { return g.w }

// Write writes p inside a stop-commands block (opening one if none is
// open) when the guard is on, as it is otherwise.
func (g *Guard) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return 0, g.err
	}
	if !g.on || len(p) == 0 {
		return g.w.Write(p)
	}
	if g.token == "" {
		tok := Token()
		if _, err := io.WriteString(g.w, "::stop-commands::"+tok+"\n"); err != nil {
			g.err = err
			return 0, err
		}
		g.token, g.midLine = tok, false
		if g.opened != nil {
			g.opened(tok)
		}
	}
	n, err := g.w.Write(p)
	if n > 0 {
		g.midLine = p[n-1] != '\n'
	}
	if err != nil {
		g.err = err
	}
	return n, err
}

// end ends the open block, on a line of its own. The caller holds mu.
func (g *Guard) end() error {
	if g.token == "" || g.err != nil {
		return g.err
	}
	end := "::" + g.token + "::\n"
	if g.midLine {
		// The end token is read only as a whole line.
		end = "\n" + end
	}
	tok := g.token
	g.token, g.midLine = "", false
	if _, err := io.WriteString(g.w, end); err != nil {
		g.err = err
		return err
	}
	if g.closed != nil {
		g.closed(tok)
	}
	return nil
}

// Outside ends the open block and calls fn with the writer underneath, so
// that what fn writes (the command's own annotations) is read as commands.
// Nothing else is written through the guard while fn runs.
func (g *Guard) Outside(fn func(w io.Writer) error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.end(); err != nil {
		return err
	}
	return fn(g.w)
}

// Close ends the open block. The guard may be written to again, in a new
// block.
func (g *Guard) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.end()
}

// Outside calls fn with the writer under w's Guard, outside any
// stop-commands block, when w is a Guard or wraps one (through Unwrap);
// otherwise with w. Writers between w and the guard that hold text back
// (a Flush method) are flushed first, so that nothing they hold lands
// outside the block.
func Outside(w io.Writer, fn func(w io.Writer) error) error {
	for cur := w; cur != nil; {
		if g, ok := cur.(*Guard); ok {
			return g.Outside(fn)
		}
		if f, ok := cur.(interface{ Flush() error }); ok {
			if err := f.Flush(); err != nil {
				return err
			}
		}
		u, ok := cur.(interface{ Unwrap() io.Writer })
		if !ok {
			break
		}
		cur = u.Unwrap()
	}
	return fn(w)
}

// Token returns a fresh token for a stop-commands block: 128 random bits
// in hex, which no output printed before it can have guessed.
func Token() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on Linux; a fixed token would be
		// guessable, so there is no fallback.
		panic(errors.New("terminal: no randomness for a stop-commands token: " + err.Error()))
	}
	return hex.EncodeToString(b)
}

// CommandData escapes a workflow command's message as GitHub's runner
// reads it back: %, carriage return and newline.
func CommandData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// CommandProperty escapes a workflow command's property value: what
// CommandData escapes, and the : and , that end a property.
func CommandProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// Annotation formats one workflow command (error, warning, notice) with
// its properties (name=value pairs, in order) and message, escaped, as
// one line: the message's own control characters show as Go escapes
// line by line (Escape), and its newlines stay newlines in the
// annotation.
func Annotation(kind string, props [][2]string, msg string) string {
	var b strings.Builder
	b.WriteString("::")
	b.WriteString(kind)
	for i, p := range props {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(p[0])
		b.WriteByte('=')
		b.WriteString(CommandProperty(Escape(p[1])))
	}
	b.WriteString("::")
	lines := strings.Split(msg, "\n")
	for i := range lines {
		lines[i] = Escape(lines[i])
	}
	b.WriteString(CommandData(strings.Join(lines, "\n")))
	b.WriteByte('\n')
	return b.String()
}
