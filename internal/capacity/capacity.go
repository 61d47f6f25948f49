// Package capacity samples the machine while a battery runs (load, memory,
// disk, and the project's containers' CPU and memory) and says whether the
// run was saturated, so the arbitration ladder can attribute a failure to
// capacity honestly: with evidence of what was contended, never by default.
package capacity

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/reap"
)

// Sample is the machine at one moment.
type Sample struct {
	At             time.Time   `json:"at"`
	Load1          float64     `json:"load1"`
	CPUs           int         `json:"cpus"`
	MemTotalBytes  uint64      `json:"mem_total_bytes"`
	MemAvailBytes  uint64      `json:"mem_available_bytes"`
	DiskFreeBytes  uint64      `json:"disk_free_bytes"`
	DiskTotalBytes uint64      `json:"disk_total_bytes"`
	Containers     []Container `json:"containers,omitempty"`
}

// Container is one of the project's containers at one moment.
type Container struct {
	Name       string  `json:"name"`
	CPUPercent float64 `json:"cpu_percent"`
	MemBytes   uint64  `json:"mem_bytes"`
	MemLimit   uint64  `json:"mem_limit_bytes"`
}

// Thresholds past which a resource counts as saturated. They are
// deliberately high: capacity is the one honest "environment" answer, and
// it must be earned.
var (
	LoadPerCPU        = 4.0  // load average per CPU: twice oversubscribed, beyond what a battery compiling itself does
	MemAvailableFrac  = 0.05 // available memory below this fraction of total
	DiskFreeFrac      = 0.02 // free disk below this fraction
	DiskFreeMin       = uint64(512 << 20)
	ContainerCPUBusy  = 95.0 // a container pegged at this CPU percent (of one CPU)
	saturatedFraction = 0.25 // of the samples, for a resource to count as contended
)

// Report is the samples of one run and what they show.
type Report struct {
	Samples   []Sample `json:"samples"`
	Saturated bool     `json:"saturated"`
	// Contended names each saturated resource with the evidence, for
	// example "load: 6.1 per CPU at peak, over 2.0 in 9 of 30 samples".
	Contended []string `json:"contended,omitempty"`
	Peak      Peak     `json:"peak"`
}

// Peak summarizes the samples.
type Peak struct {
	Load1PerCPU     float64 `json:"load1_per_cpu"`
	MemAvailMinFrac float64 `json:"mem_available_min_frac"`
	DiskFreeMinFrac float64 `json:"disk_free_min_frac"`
}

// Stats is the part of the Docker API the sampler uses.
type Stats interface {
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerStats(ctx context.Context, id string, options client.ContainerStatsOptions) (client.ContainerStatsResult, error)
}

// Sampler samples every interval until stopped.
type Sampler struct {
	mu      sync.Mutex
	samples []Sample
	stop    chan struct{}
	done    chan struct{}
	cancel  context.CancelFunc
}

// Start begins sampling dir's filesystem and, when d is not nil, the
// project's containers.
func Start(ctx context.Context, dir string, d Stats, every time.Duration) *Sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &Sampler{stop: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			smp := Take(ctx, dir, d)
			s.mu.Lock()
			s.samples = append(s.samples, smp)
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the report. A sample in progress is cut
// short, not waited for: reading every container's stats from a busy Docker
// engine can take seconds, which a run would otherwise spend after its
// battery ended. What it had read by then is kept.
func (s *Sampler) Stop() Report {
	close(s.stop)
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return Analyze(s.samples)
}

// Take samples the machine once. A source that cannot be read leaves its
// fields zero.
func Take(ctx context.Context, dir string, d Stats) Sample {
	smp := Sample{At: time.Now(), CPUs: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			smp.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	smp.MemTotalBytes, smp.MemAvailBytes = meminfo()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil {
		smp.DiskFreeBytes = st.Bavail * uint64(st.Bsize)
		smp.DiskTotalBytes = st.Blocks * uint64(st.Bsize)
	}
	if d != nil {
		smp.Containers = containers(ctx, d)
	}
	return smp
}

func meminfo() (total, avail uint64) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(fields[1], 10, 64)
		switch fields[0] {
		case "MemTotal:":
			total = kb << 10
		case "MemAvailable:":
			avail = kb << 10
		}
	}
	return total, avail
}

func containers(ctx context.Context, d Stats) []Container {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := d.ContainerList(ctx, client.ContainerListOptions{Filters: client.Filters{}.Add("label", reap.LabelManaged+"=true")})
	if err != nil {
		return nil
	}
	var out []Container
	for _, c := range list.Items {
		r, err := d.ContainerStats(ctx, c.ID, client.ContainerStatsOptions{Stream: false})
		if err != nil {
			continue
		}
		var v struct {
			CPUStats struct {
				CPUUsage struct {
					TotalUsage uint64 `json:"total_usage"`
				} `json:"cpu_usage"`
				SystemUsage uint64 `json:"system_cpu_usage"`
				OnlineCPUs  uint32 `json:"online_cpus"`
			} `json:"cpu_stats"`
			PreCPUStats struct {
				CPUUsage struct {
					TotalUsage uint64 `json:"total_usage"`
				} `json:"cpu_usage"`
				SystemUsage uint64 `json:"system_cpu_usage"`
			} `json:"precpu_stats"`
			MemoryStats struct {
				Usage uint64 `json:"usage"`
				Limit uint64 `json:"limit"`
			} `json:"memory_stats"`
		}
		err = json.NewDecoder(r.Body).Decode(&v)
		r.Body.Close()
		if err != nil {
			continue
		}
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		ct := Container{Name: name, MemBytes: v.MemoryStats.Usage, MemLimit: v.MemoryStats.Limit}
		if dc, ds := float64(v.CPUStats.CPUUsage.TotalUsage)-float64(v.PreCPUStats.CPUUsage.TotalUsage),
			float64(v.CPUStats.SystemUsage)-float64(v.PreCPUStats.SystemUsage); dc > 0 && ds > 0 {
			ct.CPUPercent = dc / ds * float64(max(v.CPUStats.OnlineCPUs, 1)) * 100
		}
		out = append(out, ct)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Analyze decides which resources were contended: those past their
// threshold in at least a quarter of the samples.
func Analyze(samples []Sample) Report {
	r := Report{Samples: samples, Peak: Peak{MemAvailMinFrac: 1, DiskFreeMinFrac: 1}}
	if len(samples) == 0 {
		return r
	}
	var load, mem, disk int
	busy := map[string]int{}
	for _, s := range samples {
		if s.CPUs > 0 {
			lpc := s.Load1 / float64(s.CPUs)
			r.Peak.Load1PerCPU = max(r.Peak.Load1PerCPU, lpc)
			if lpc > LoadPerCPU {
				load++
			}
		}
		if s.MemTotalBytes > 0 {
			f := float64(s.MemAvailBytes) / float64(s.MemTotalBytes)
			r.Peak.MemAvailMinFrac = min(r.Peak.MemAvailMinFrac, f)
			if f < MemAvailableFrac {
				mem++
			}
		}
		if s.DiskTotalBytes > 0 {
			f := float64(s.DiskFreeBytes) / float64(s.DiskTotalBytes)
			r.Peak.DiskFreeMinFrac = min(r.Peak.DiskFreeMinFrac, f)
			if f < DiskFreeFrac || s.DiskFreeBytes < DiskFreeMin {
				disk++
			}
		}
		for _, c := range s.Containers {
			if c.CPUPercent >= ContainerCPUBusy {
				busy[c.Name]++
			}
		}
	}
	n := len(samples)
	contended := func(k int) bool { return float64(k) >= saturatedFraction*float64(n) && k > 0 }
	if contended(load) {
		r.Contended = append(r.Contended, fmt.Sprintf("load: %.1f per CPU at peak, over %.1f in %d of %d samples", r.Peak.Load1PerCPU, LoadPerCPU, load, n))
	}
	if contended(mem) {
		r.Contended = append(r.Contended, fmt.Sprintf("memory: %.1f%% available at the lowest, under %.0f%% in %d of %d samples", r.Peak.MemAvailMinFrac*100, MemAvailableFrac*100, mem, n))
	}
	if contended(disk) {
		r.Contended = append(r.Contended, fmt.Sprintf("disk: %.1f%% free at the lowest in %d of %d samples", r.Peak.DiskFreeMinFrac*100, disk, n))
	}
	var names []string
	for name := range busy {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if contended(busy[name]) {
			r.Contended = append(r.Contended, fmt.Sprintf("container %s: CPU at %.0f%% or more in %d of %d samples", name, ContainerCPUBusy, busy[name], n))
		}
	}
	r.Saturated = len(r.Contended) > 0
	return r
}

// Load reads a saved report with the one loader of artifacts
// (atomicfile.Load): never through a symbolic link, never waiting on a
// FIFO, never more than atomicfile.MaxArtifact bytes.
func Load(path string) (*Report, error) {
	b, err := atomicfile.Load(path, atomicfile.MaxArtifact)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read capacity report %s: %w", path, err)
	}
	return &r, nil
}

// Window is the report of the samples taken while something ran, from
// from to to, with the sample before and the one after (one interval
// either side, so that a test shorter than the interval still has two):
// what the machine gave one test, rather than the whole run.
func (r Report) Window(from, to time.Time) Report {
	var in []Sample
	before, after := -1, -1
	for i, s := range r.Samples {
		switch {
		case s.At.Before(from):
			before = i
		case s.At.After(to):
			if after < 0 {
				after = i
			}
		default:
			in = append(in, s)
		}
	}
	if before >= 0 {
		in = append([]Sample{r.Samples[before]}, in...)
	}
	if after >= 0 {
		in = append(in, r.Samples[after])
	}
	return Analyze(in)
}
