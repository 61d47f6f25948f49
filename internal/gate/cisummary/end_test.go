package cisummary

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/terminal"
	"github.com/contested/contested/internal/workflowtest"
)

// TestPublishEndSaysHowARunWithoutAVerdictEnded: a run that cannot run, is
// stopped, or whose worker was killed gets one annotation the runner reads
// (even while the command's output is in a stop-commands block) and a
// section of the step summary with what happened, the exit code, why and
// what to do, its text escaped; a run that published already gets none.
func TestPublishEndSaysHowARunWithoutAVerdictEnded(t *testing.T) {
	tests := []struct {
		name string
		e    End
		want []string
	}{
		{"cannot run", End{Command: "validate", Code: 3, What: "CANNOT RUN", Why: "fault-preflight failed",
			Repair: []string{"toxiproxy: no answer; start Docker"}},
			[]string{"### contested validate: CANNOT RUN", "exit 3: cannot run", "**Why:** fault-preflight failed", "- toxiproxy: no answer; start Docker"}},
		{"stopped", End{Command: "validate", Code: 1, What: "STOPPED", Why: "interrupted by SIGTERM"},
			[]string{"### contested validate: STOPPED", "exit 1: red, refused, stopped"}},
		{"hostile text", End{Command: "validate", Code: 1, What: "FAILED", Why: "<script>x</script>\r\n::error::forged"},
			[]string{"**Why:** \\<script\\>x\\</script\\>\\\\r\\\\n::error::forged"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			published.Store(false)
			path := filepath.Join(t.TempDir(), "summary")
			os.WriteFile(path, nil, 0o644)
			var log bytes.Buffer
			g := terminal.NewGuard(&log, true)
			g.Write([]byte("a line the command printed\n"))
			if err := PublishEnd(CI{GitHub: true, StepSummary: path}, tt.e, g); err != nil {
				t.Fatal(err)
			}
			if err := PublishEnd(CI{GitHub: true, StepSummary: path}, tt.e, g); err != nil {
				t.Fatal(err)
			}
			c := workflowtest.Commands(log.String())
			if len(c) != 1 || c[0].Name != "error" || !strings.Contains(c[0].Data, tt.e.What) {
				t.Errorf("the runner acts on %+v, want one error annotation:\n%s", c, log.String())
			}
			b, _ := os.ReadFile(path)
			for _, w := range tt.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("the summary lacks %q:\n%s", w, b)
				}
			}
			if strings.Count(string(b), "### contested") != 1 {
				t.Errorf("the summary holds the end %d times:\n%s", strings.Count(string(b), "### contested"), b)
			}
		})
	}
	published.Store(false)
}
