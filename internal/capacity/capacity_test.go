package capacity

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestAnalyze(t *testing.T) {
	base := Sample{CPUs: 2, Load1: 0.5, MemTotalBytes: 100, MemAvailBytes: 50, DiskTotalBytes: 100 << 30, DiskFreeBytes: 50 << 30}
	tests := []struct {
		name string
		mod  func(i int, s *Sample)
		want string // "" means not saturated
	}{
		{"idle machine", nil, ""},
		{"loaded for a third of the run", func(i int, s *Sample) {
			if i%3 == 0 {
				s.Load1 = 9
			}
		}, "load: 4.5 per CPU"},
		{"one load spike is not saturation", func(i int, s *Sample) {
			if i == 0 {
				s.Load1 = 9
			}
		}, ""},
		{"memory nearly gone", func(i int, s *Sample) { s.MemAvailBytes = 2 }, "memory: 2.0% available"},
		{"disk nearly full", func(i int, s *Sample) { s.DiskFreeBytes = 100 << 20 }, "disk:"},
		{"a pegged container", func(i int, s *Sample) {
			s.Containers = []Container{{Name: "contested-x-postgres", CPUPercent: 99}}
		}, "container contested-x-postgres"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ss []Sample
			for i := range 12 {
				s := base
				if tt.mod != nil {
					tt.mod(i, &s)
				}
				ss = append(ss, s)
			}
			r := Analyze(ss)
			if (tt.want != "") != r.Saturated {
				t.Fatalf("saturated = %v (%v), want %v", r.Saturated, r.Contended, tt.want != "")
			}
			if tt.want != "" && !strings.Contains(strings.Join(r.Contended, "; "), tt.want) {
				t.Errorf("contended %v does not say %q", r.Contended, tt.want)
			}
		})
	}
	if r := Analyze(nil); r.Saturated {
		t.Error("no samples reads as saturated")
	}
}

func TestSamplerReadsThisMachine(t *testing.T) {
	s := Start(context.Background(), os.TempDir(), nil, 20*time.Millisecond)
	time.Sleep(70 * time.Millisecond)
	r := s.Stop()
	if len(r.Samples) < 2 {
		t.Fatalf("%d samples in 70ms at 20ms, want several", len(r.Samples))
	}
	got := r.Samples[0]
	if got.CPUs == 0 || got.MemTotalBytes == 0 || got.DiskTotalBytes == 0 {
		t.Errorf("sample did not read the machine: %+v", got)
	}
}
