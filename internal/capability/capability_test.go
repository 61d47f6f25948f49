package capability

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMissingIsOneSentenceThatFromOutputReads(t *testing.T) {
	tests := []struct {
		name string
		c    Capability
		want string
	}{
		{"with what was looked at", Capability{Name: Chromium, Detail: "not found on PATH (looked for chromium)", Provide: "apt-get install chromium"},
			"missing capability chromium: not found on PATH (looked for chromium); provide it: apt-get install chromium"},
		{"without", Capability{Name: Disk}, "missing capability disk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Missing(); got != tt.want {
				t.Errorf("Missing() = %q, want %q", got, tt.want)
			}
			skip := "    stage_test.go:25: " + tt.c.Missing() + "\n--- SKIP: TestX (0.00s)\n"
			if got := FromOutput(skip); !slices.Equal(got, []Name{tt.c.Name}) {
				t.Errorf("FromOutput(%q) = %v, want [%s]", skip, got, tt.c.Name)
			}
		})
	}
	if got := FromOutput("missing capability teleporter: none; missing capability docker: x; missing capability docker: y"); !slices.Equal(got, []Name{Docker}) {
		t.Errorf("FromOutput keeps unknown names or repeats: %v", got)
	}
}

func TestChromiumIsFoundOnPathOrNamedMissing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	c := Probe(context.Background(), Chromium, dir)
	if c.Present || c.Provide != "apt-get install chromium" || !strings.Contains(c.Detail, "looked for chromium, chromium-browser") {
		t.Fatalf("without a Chromium on PATH: %+v", c)
	}
	fake := filepath.Join(dir, "chromium")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'Chromium 131.0.6778.204 built on Debian 12.8'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c = Probe(context.Background(), Chromium, dir)
	if !c.Present || c.Version != "131.0.6778.204" || c.Source != fake || c.Provide != "" {
		t.Fatalf("with %s on PATH: %+v", fake, c)
	}
}

func TestTheMatrixSaysWhoNeedsWhatIsMissing(t *testing.T) {
	m := Matrix{{Name: Chromium, NeededBy: []string{}}, {Name: Cores, Present: true, NeededBy: []string{}}, {Name: Disk, NeededBy: []string{}}}
	m.Need(Chromium, "ledger.web/reset")
	m.Need(Chromium, "ledger.web/reset")
	m.Need(Cores, "battery")
	if c, _ := m.Get(Chromium); !slices.Equal(c.NeededBy, []string{"ledger.web/reset"}) {
		t.Errorf("chromium needed by %v", c.NeededBy)
	}
	got := m.MissingNeeded()
	if len(got) != 1 || got[0].Name != Chromium {
		t.Errorf("MissingNeeded = %+v, want chromium alone (disk is missing but nobody needs it; cores is present)", got)
	}
	if !m.Lacks(Chromium) || m.Lacks(Cores) || m.Lacks(Docker) {
		t.Error("Lacks answers wrong: a missing row lacks, a present row or a row the matrix does not hold does not")
	}
}

func TestDiskAndCoresAreMeasured(t *testing.T) {
	d := Probe(context.Background(), Disk, t.TempDir())
	if d.Version == "" || !strings.HasSuffix(d.Version, "GiB free") {
		t.Errorf("disk: %+v", d)
	}
	if c := Probe(context.Background(), Cores, ""); !c.Present || c.Version == "" || c.Version == "0" {
		t.Errorf("cores: %+v", c)
	}
}
