package flakes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTheHistoryFileIsReadAndWrittenSafely: the history file goes through
// the results directory's loader. A FIFO in its place is refused at once
// by Read and Append (never waited on); a link at the file or at its
// directory is refused, and Append writes nothing through it; a line over
// the line cap or that is not an outcome is skipped and counted, and the
// other lines are read; of a file over the file cap the newest part is
// read.
func TestTheHistoryFileIsReadAndWrittenSafely(t *testing.T) {
	good := runs(3, 1)
	lines := func(t *testing.T) []byte {
		var b bytes.Buffer
		for _, o := range good {
			o.Schema = Schema
			j, _ := json.Marshal(o)
			b.Write(append(j, '\n'))
		}
		return b.Bytes()
	}
	tests := []struct {
		name     string
		setup    func(t *testing.T, root string)
		readErr  string // "" when the read succeeds, in whole or in part
		outcomes int    // how many times the good lines
		tooLong  int
		bad      int
		skipped  bool
		appends  bool
	}{
		{"a FIFO", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(root, "history"), 0o755)
			if err := syscall.Mkfifo(filepath.Join(root, FileName), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "FIFO", 0, 0, 0, false, false},
		{"a symbolic link at the file", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(root, "history"), 0o755)
			target := filepath.Join(t.TempDir(), "elsewhere.jsonl")
			os.WriteFile(target, lines(t), 0o644)
			os.Symlink(target, filepath.Join(root, FileName))
		}, "symbolic link", 0, 0, 0, false, false},
		{"a symbolic link at its directory", func(t *testing.T, root string) {
			target := t.TempDir()
			os.WriteFile(filepath.Join(target, "outcomes.jsonl"), lines(t), 0o644)
			os.Symlink(target, filepath.Join(root, "history"))
		}, "symbolic link", 0, 0, 0, false, false},
		{"a line over the line cap among good ones", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(root, "history"), 0o755)
			huge := append(bytes.Repeat([]byte("x"), maxLine+10), '\n')
			os.WriteFile(filepath.Join(root, FileName), bytes.Join([][]byte{lines(t), huge, lines(t)}, nil), 0o644)
		}, "", 2, 1, 0, false, true},
		{"lines that are not outcomes", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(root, "history"), 0o755)
			os.WriteFile(filepath.Join(root, FileName), append([]byte("not json\n{\"schema\":\"other@1\"}\n\x1b[2J\n"), lines(t)...), 0o644)
		}, "", 1, 0, 3, false, true},
		{"a file over the file cap", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(root, "history"), 0o755)
			p := filepath.Join(root, FileName)
			os.WriteFile(p, lines(t), 0o644)
			if err := os.Truncate(p, maxFile+1000); err != nil {
				t.Fatal(err)
			}
			f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			f.Write(append([]byte("\n"), lines(t)...))
			f.Close()
		}, "", 1, 0, 0, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.setup(t, root)
			f := NewFile(root)
			type result struct {
				outs []Outcome
				err  error
			}
			done := make(chan result, 1)
			go func() {
				outs, err := f.Read(context.Background())
				done <- result{outs, err}
			}()
			var got result
			select {
			case got = <-done:
			case <-time.After(time.Minute):
				t.Fatal("Read waited on the history")
			}
			if tt.readErr != "" {
				if got.err == nil || !strings.Contains(got.err.Error(), tt.readErr) || errors.Is(got.err, ErrPartial) {
					t.Errorf("Read = %d outcomes, %v; want refused: %s", len(got.outs), got.err, tt.readErr)
				}
			} else {
				var partial *PartialError
				if !errors.As(got.err, &partial) || len(got.outs) != tt.outcomes*len(good) || partial.TooLong != tt.tooLong || partial.Unreadable < tt.bad || (partial.Skipped > 0) != tt.skipped {
					t.Errorf("Read = %d outcomes, %+v (%v); want %d, %d too long, %d not outcomes, part skipped %v", len(got.outs), partial, got.err, tt.outcomes*len(good), tt.tooLong, tt.bad, tt.skipped)
				}
			}
			appended := make(chan error, 1)
			go func() { appended <- f.Append(context.Background(), good) }()
			select {
			case err := <-appended:
				if (err == nil) != tt.appends {
					t.Errorf("Append = %v; want it to succeed %v", err, tt.appends)
				}
			case <-time.After(time.Minute):
				t.Fatal("Append waited on the history")
			}
		})
	}
}
