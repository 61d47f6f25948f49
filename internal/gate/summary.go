package gate

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/seed"
	"github.com/contested/contested/internal/terminal"
)

// SummaryOption changes how [Report.WriteSummary] writes.
type SummaryOption func(*summaryConfig)

type summaryConfig struct {
	color *bool // nil: decide from the writer
}

// WithColor forces colour on or off, overriding the automatic choice. Use it for a
// --color=always|never flag; without it WriteSummary decides (see there).
func WithColor(on bool) SummaryOption {
	return func(c *summaryConfig) { c.color = &on }
}

// WriteSummary writes the human summary of the report: armed and fired per class, the unfired
// legs with their replay commands, unreadable files, classes_with_zero_fired, one line per phase
// and a final CERTIFIED or REFUSED line.
//
// Colour goes through fatih/color. Unless [WithColor] says otherwise it is used only when w is
// a terminal and the user has not opted out: for os.Stdout that is fatih/color's NoColor (NO_COLOR,
// TERM=dumb, not a terminal); for another *os.File the same rules are applied to that file; for
// any other writer (a buffer, a log, a pipe wrapper) no escape is ever written.
func (r *Report) WriteSummary(w io.Writer, opts ...SummaryOption) error {
	var cfg summaryConfig
	for _, o := range opts {
		o(&cfg)
	}
	on := autoColor(w)
	if cfg.color != nil {
		on = *cfg.color
	}
	p := newPalette(on)
	ew := &errWriter{w: w}
	ew.printf("%s (%s) in %s\n", p.bold.Sprint("fault gate"), r.Mode, r.Dir)
	if r.RunID != "" {
		ew.printf("stamp run id: %s\n", r.RunID)
	}
	r.writeClasses(ew, p)
	r.writeProblems(ew, p)
	r.writePhases(ew, p)
	if ew.err != nil {
		return fmt.Errorf("write summary: %w", ew.err)
	}
	return nil
}

// writeClasses writes armed and fired per class, a recording class at
// zero in red.
func (r *Report) writeClasses(ew *errWriter, p palette) {
	ew.printf("\n%s\n", p.bold.Sprint("armed / fired per class"))
	classes := sortedKeys(r.ByClass)
	width := 5
	for _, c := range classes {
		width = max(width, len(c))
	}
	if len(classes) == 0 {
		ew.printf("  (no classes)\n")
	}
	for _, c := range classes {
		n := r.ByClass[c]
		line := fmt.Sprintf("  %-*s  armed %5d  fired %5d", width, esc(c), n.Armed, n.Fired)
		tag := ""
		switch {
		case n.Fired == 0 && slices.Contains(r.RecordingClasses, c):
			line = p.bad.Sprint(line)
			tag = p.bad.Sprint("  recording class at zero")
		case n.Fired == 0:
			line = p.warn.Sprint(line)
		case n.Fired < n.Armed:
			line = p.warn.Sprint(line)
		}
		ew.printf("%s%s\n", line, tag)
	}
}

// esc makes text read from the records (names, file names, details)
// safe to print: a control character in it is shown, never acted on.
func esc(s string) string { return terminal.Escape(s) }

// writeProblems writes what refuses or weakens the run: unfired legs with
// their replay commands, unreadable and stale files, classes with zero
// fired, missing self-tests.
func (r *Report) writeProblems(ew *errWriter, p palette) {
	if len(r.Unfired) > 0 {
		ew.printf("\n%s\n", p.bad.Sprintf("unfired legs (%d)", len(r.Unfired)))
		for _, u := range r.Unfired {
			ew.printf("  %s  surface %s  class %s  leg %s  %s  (%s)\n", esc(u.Test), esc(u.Surface), esc(u.Class), esc(u.Leg), seed.Seed(u.Seed).Say(), esc(u.File))
			replay := u.Replay
			if replay == "" {
				replay = "(no replay command recorded)"
			}
			ew.printf("    replay: %s\n", esc(replay))
		}
	}
	if len(r.Unreadable) > 0 {
		ew.printf("\n%s\n", p.bad.Sprintf("unreadable files (%d)", len(r.Unreadable)))
		for _, u := range r.Unreadable {
			ew.printf("  %s: %s\n", esc(u.File), esc(u.Reason))
		}
	}
	if len(r.Stale) > 0 {
		ew.printf("\n%s\n", p.bad.Sprintf("records older than the stamp (%d)", len(r.Stale)))
		for _, s := range r.Stale {
			ew.printf("  %s\n", esc(s))
		}
	}
	if len(r.ClassesWithZeroFired) > 0 {
		ew.printf("\n%s %s\n", p.warn.Sprint("classes_with_zero_fired (not recording classes, named not failed):"),
			esc(strings.Join(r.ClassesWithZeroFired, ", ")))
	}
	var missing []string
	for _, s := range r.SelfTests {
		if !s.Present {
			missing = append(missing, s.Name)
		}
	}
	if len(missing) > 0 {
		ew.printf("\n%s %s\n", p.bad.Sprint("self-tests missing:"), strings.Join(missing, ", "))
	}
}

// writePhases writes one line per phase and the final CERTIFIED or
// REFUSED line.
func (r *Report) writePhases(ew *errWriter, p palette) {
	ew.printf("\n%s\n", p.bold.Sprint("phases"))
	for _, ph := range r.Phases {
		verdict := p.good.Sprint("ok     ")
		if !ph.OK {
			verdict = p.bad.Sprint("REFUSED")
		}
		ew.printf("  %d %-38s %s  %s\n", ph.Number, ph.Name, verdict, esc(ph.Detail))
	}
	counts := fmt.Sprintf("%d records read, %d unreadable, %d armed, %d fired", r.RecordsRead, r.RecordsUnreadable, r.Armed, r.Fired)
	if r.Certified {
		ew.printf("\n%s  %s\n", p.goodBold.Sprint("CERTIFIED"), counts)
	} else {
		ew.printf("\n%s  %s\n", p.badBold.Sprint("REFUSED"), counts)
	}
}

// autoColor decides colour for w when the caller did not: only for a terminal, never when the
// user opted out, never for a writer that is not a file.
func autoColor(w io.Writer) bool {
	// A filter in front of the file (the targets' secret scrubber) says what it wraps.
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	if f == os.Stdout {
		return !color.NoColor
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

type palette struct {
	bold, good, bad, warn, goodBold, badBold *color.Color
}

// newPalette builds colours whose on/off state is their own, so a summary never flips the
// package-global color.NoColor that other output depends on.
func newPalette(on bool) palette {
	p := palette{
		bold:     color.New(color.Bold),
		good:     color.New(color.FgGreen),
		bad:      color.New(color.FgRed),
		warn:     color.New(color.FgYellow),
		goodBold: color.New(color.FgGreen, color.Bold),
		badBold:  color.New(color.FgRed, color.Bold),
	}
	for _, c := range []*color.Color{p.bold, p.good, p.bad, p.warn, p.goodBold, p.badBold} {
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
	}
	return p
}

// errWriter keeps the first write error so the summary code reads as a sequence of prints.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, a...)
}
