package command

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/report"
	"github.com/contested/contested/internal/rundir"
)

// TestABadResultsDirIsRefusedBeforeAnythingStarts runs every target that
// writes artifacts with a results directory that must never hold them:
// each exits 2 saying what to set, before the fault layer comes up (the
// layer named here is dead: reaching it would print fault-preflight and
// exit 3), and writes nothing.
func TestABadResultsDirIsRefusedBeforeAnythingStarts(t *testing.T) {
	dead := deadAddr(t)
	dirs := []struct {
		name  string
		setup func(t *testing.T, mod string) string
		says  string
	}{
		{"the file system root", func(*testing.T, string) string { return "/" }, "file system root"},
		{"a system directory", func(*testing.T, string) string { return "/etc" }, "system directory"},
		{"the module root", func(_ *testing.T, mod string) string { return "." }, "module root itself"},
		{"a file", func(t *testing.T, mod string) string {
			p := filepath.Join(mod, "results")
			os.WriteFile(p, []byte("x"), 0o644)
			return p
		}, "is a file"},
		{"a read-only directory", func(t *testing.T, mod string) string {
			p := filepath.Join(mod, "ro")
			os.Mkdir(p, 0o555)
			t.Cleanup(func() { os.Chmod(p, 0o755) })
			return p
		}, "read-only"},
		{"a link to another directory", func(t *testing.T, mod string) string {
			p := filepath.Join(mod, "test-results")
			os.Symlink(t.TempDir(), p)
			return "test-results"
		}, "symbolic link"},
		{"fault/ a link to another directory", func(t *testing.T, mod string) string {
			p := filepath.Join(mod, "test-results")
			os.Mkdir(p, 0o755)
			os.Symlink(t.TempDir(), filepath.Join(p, "fault"))
			return "test-results"
		}, "fault is a symbolic link"},
	}
	targets := []struct {
		name string
		run  func(ctx context.Context, mod string, out *strings.Builder) error
	}{
		{"validate", func(ctx context.Context, mod string, out *strings.Builder) error {
			return Validate(ctx, ValidateOptions{Dir: mod, Out: out})
		}},
		{"program-gate", func(ctx context.Context, mod string, out *strings.Builder) error {
			return ProgramGate(ctx, ProgramGateOptions{Dir: mod, Out: out})
		}},
		{"contested", func(ctx context.Context, mod string, out *strings.Builder) error {
			return Contested(ctx, ContestedOptions{Dir: mod, Surface: "all", Out: out})
		}},
		{"arbitrate", func(ctx context.Context, mod string, out *strings.Builder) error {
			return Arbitrate(ctx, ArbitrateOptions{Dir: mod, Test: "TestLeg", Out: out})
		}},
		{"fault-preflight", func(ctx context.Context, mod string, out *strings.Builder) error {
			t.Chdir(mod)
			return FaultPreflight(ctx, PreflightOptions{Required: true, Out: out})
		}},
	}
	for _, d := range dirs {
		for _, target := range targets {
			t.Run(d.name+"/"+target.name, func(t *testing.T) {
				mod := module(t)
				t.Setenv(envvar.Layer, "")
				t.Setenv(envvar.ToxiproxyURL, "http://"+dead)
				t.Setenv(envvar.PostgresDSN, "postgres://u:p@"+dead+"/db")
				t.Setenv(envvar.Surfaces, "")
				t.Setenv(envvar.ResultsDir, d.setup(t, mod))
				before := entries(t, mod)
				var out strings.Builder
				err := target.run(context.Background(), mod, &out)
				if got := ExitCode(err); got != ExitUsage || !strings.Contains(err.Error(), d.says) || !strings.Contains(err.Error(), envvar.ResultsDir) && !strings.Contains(err.Error(), "remove the link") {
					t.Fatalf("exit %d (%v), want %d saying %q and what to do; output:\n%s", got, err, ExitUsage, d.says, out.String())
				}
				if strings.Contains(out.String(), "fault-preflight") {
					t.Errorf("the fault layer was reached before the results directory was checked:\n%s", out.String())
				}
				if after := entries(t, mod); after != before {
					t.Errorf("the module changed:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
	}
}

// entries lists a tree's paths, to prove a refused command wrote nothing.
func entries(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		out = append(out, strings.TrimPrefix(p, dir))
		return nil
	})
	return strings.Join(out, " ")
}

// TestArtifactsThatFailToSaveAreNotAnnouncedAsSaved: a ladder outcome or a
// report that cannot be written is announced as NOT saved, never as saved.
func TestArtifactsThatFailToSaveAreNotAnnouncedAsSaved(t *testing.T) {
	page := report.Page{Title: "t", Gate: &gate.Report{}}
	tests := []struct {
		name    string
		blocker string // a file where a directory must be
		saved   int    // lines announcing a save
		failed  int    // NOT saved lines
	}{
		{"ladder/ is a file", "ladder", 1, 2},
		{"fault/ is a file", "fault", 2, 1},
		{"nothing in the way", "", 3, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.blocker != "" {
				os.WriteFile(filepath.Join(root, tc.blocker), []byte("in the way"), 0o644)
			}
			var out strings.Builder
			saveOutcome(rundir.Dir(root), &ladder.Outcome{Test: "TestA/b"}, &out)
			writeReports(rundir.Dir(root), page, &out)
			text := out.String()
			failed := strings.Count(text, "NOT saved")
			saved := strings.Count(text, "ladder: saved") + strings.Count(text, "reports: ")
			if failed != tc.failed || saved != tc.saved {
				t.Errorf("%d NOT saved and %d saved lines, want %d and %d:\n%s", failed, saved, tc.failed, tc.saved, text)
			}
			for _, line := range strings.Split(text, "\n") {
				if strings.Contains(line, "NOT saved") && (strings.Contains(line, "ladder: saved") || strings.HasPrefix(line, "reports: ")) {
					t.Errorf("a line says both: %s", line)
				}
			}
		})
	}
}

// TestWriteReportsWritesEveryFormat: a run with a battery is written in
// every format report.Formats lists, each at its path and named on the
// reports line; one without a battery skips the formats that need one
// and names no file it did not write.
func TestWriteReportsWritesEveryFormat(t *testing.T) {
	clearCI(t)
	bat := &battery.Result{Tests: []battery.Test{{Package: "example.com/m", Name: "TestA", Action: "pass"}}}
	for _, tc := range []struct {
		name    string
		battery *battery.Result
	}{{"with a battery", bat}, {"without one", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			var out strings.Builder
			writeReports(rundir.Dir(root), report.Page{Title: "t", Battery: tc.battery}, &out)
			for _, f := range report.Formats {
				var probe strings.Builder
				shows := !errors.Is(f.Write(&probe, report.Page{Battery: tc.battery}), report.ErrNothingToShow)
				_, err := os.Stat(filepath.Join(root, f.Path()))
				if (err == nil) != shows || strings.Contains(out.String(), f.Path()) != shows {
					t.Errorf("%T: written %v, named %v; want %v:\n%s", f, err == nil, strings.Contains(out.String(), f.Path()), shows, out.String())
				}
			}
		})
	}
}
