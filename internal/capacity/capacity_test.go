package capacity

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
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

// TestStopCutsASampleShort: Stop does not wait for a container's stats that
// the engine is slow to give; it cancels the request (the sample's own
// five-second limit is not what ends it).
func TestStopCutsASampleShort(t *testing.T) {
	d := &slowStats{asked: make(chan struct{}), ended: make(chan error, 1)}
	s := Start(context.Background(), os.TempDir(), d, time.Hour)
	<-d.asked
	r := s.Stop()
	if err := <-d.ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the stats request ended with %v, want it cancelled by Stop", err)
	}
	if len(r.Samples) != 1 || r.Samples[0].CPUs == 0 {
		t.Errorf("the sample cut short was not kept with what it had read: %+v", r.Samples)
	}
}

// slowStats lists one container and answers its stats only when the
// request's context ends, saying how it ended.
type slowStats struct {
	asked chan struct{}
	ended chan error
}

func (d *slowStats) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	return client.ContainerListResult{Items: []container.Summary{{ID: "0123456789abcdef", Names: []string{"/slow"}}}}, nil
}

func (d *slowStats) ContainerStats(ctx context.Context, _ string, _ client.ContainerStatsOptions) (client.ContainerStatsResult, error) {
	close(d.asked)
	<-ctx.Done()
	d.ended <- ctx.Err()
	return client.ContainerStatsResult{}, ctx.Err()
}

var _ Stats = (*slowStats)(nil)
