package gate

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"strings"
	"sync"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/faultdir"
)

type inventoryResult struct {
	names []string
	err   error
}

// scanResult is the merged tally of every file in the fault directory.
type scanResult struct {
	tally
	dirMissing bool
	dirErr     error // listing the directory failed
}

// tally is one worker's share; workers never share one, so no locking on the hot path.
type tally struct {
	records    int // *.json files seen (valid or not)
	read       int
	armed      int
	fired      int
	byClass    map[string]ClassCount
	unfired    []Unfired
	unreadable []Unreadable
	stale      []string
}

func (t *tally) merge(o *tally) {
	t.records += o.records
	t.read += o.read
	t.armed += o.armed
	t.fired += o.fired
	for c, n := range o.byClass {
		m := t.byClass[c]
		m.Armed += n.Armed
		m.Fired += n.Fired
		t.byClass[c] = m
	}
	t.unfired = append(t.unfired, o.unfired...)
	t.unreadable = append(t.unreadable, o.unreadable...)
	t.stale = append(t.stale, o.stale...)
}

// scan lists dir in batches and hands record files to a bounded pool of readers. Names are
// classified by suffix and prefix only.
func scan(ctx context.Context, d *atomicfile.Dir, st stampState, opts Options) scanResult {
	res := scanResult{tally: tally{byClass: map[string]ClassCount{}}}
	if d == nil {
		return res
	}
	var surfaces map[string]struct{}
	if opts.Surfaces != nil {
		surfaces = make(map[string]struct{}, len(opts.Surfaces))
		for _, s := range opts.Surfaces {
			surfaces[s] = struct{}{}
		}
	}
	workers := opts.Workers
	if workers <= 0 {
		// Reading a record is mostly syscalls (openat, fstat, read, close) that block in the
		// kernel, so a few more readers than CPUs keep the CPUs busy; more only adds contention.
		workers = min(4*runtime.GOMAXPROCS(0), 64)
	}
	jobs := make(chan []string, workers)
	tallies := make([]tally, workers)
	var wg sync.WaitGroup
	for i := range workers {
		tallies[i].byClass = map[string]ClassCount{}
		r := &reader{dir: d, stamp: st, surfaces: surfaces, t: &tallies[i]}
		wg.Go(func() {
			for batch := range jobs {
				if ctx.Err() != nil {
					continue // drain so the lister never blocks
				}
				for _, name := range batch {
					r.read(name)
				}
			}
		})
	}
	list(ctx, d, &res, jobs)
	close(jobs)
	wg.Wait()
	for i := range tallies {
		res.merge(&tallies[i])
	}
	return res
}

// list reads dir's entries in batches and sends the record files to jobs in batches; what is
// not a record to read (a leftover temporary record, a link or other non-regular file) goes to
// res as unreadable, and a listing error to res.dirErr.
func list(ctx context.Context, d *atomicfile.Dir, res *scanResult, jobs chan<- []string) {
	const batchSize = 256
	for {
		entries, err := d.ReadDir(1024)
		batch := make([]string, 0, batchSize)
		for _, e := range entries {
			name := e.Name()
			switch faultdir.Classify(name) {
			case faultdir.KindRecordTemp:
				res.unreadable = append(res.unreadable, Unreadable{File: name,
					Reason: "incomplete write: a writer died before renaming this temporary record, so its fault has no evidence"})
			case faultdir.KindRecord:
				// A link, directory, FIFO, socket or device is never opened. (A file system
				// that does not give types in listings gets the same refusals from the loader.)
				if t := e.Type(); t != 0 {
					res.records++
					res.unreadable = append(res.unreadable, Unreadable{File: name, Reason: notARecord(t)})
					continue
				}
				batch = append(batch, name)
				if len(batch) == batchSize {
					jobs <- batch
					batch = make([]string, 0, batchSize)
				}
			}
		}
		if len(batch) > 0 {
			jobs <- batch
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			res.dirErr = err
			return
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// reader reads record files for one worker, reusing its buffer and record value.
type reader struct {
	dir      *atomicfile.Dir
	stamp    stampState
	surfaces map[string]struct{}
	t        *tally
	buf      []byte
	rec      faultrecord.Record
}

func (r *reader) read(name string) {
	t := r.t
	t.records++
	data, mtime, err := r.dir.ReadFile(name, r.buf, faultrecord.MaxRecordSize)
	r.buf = data[:0]
	if err != nil {
		t.unreadable = append(t.unreadable, Unreadable{File: name, Reason: err.Error()})
		return
	}
	if r.stamp.present && !mtime.After(r.stamp.mtime) {
		t.stale = append(t.stale, name)
	}
	rec := &r.rec
	if err := faultrecord.ParseRecordInto(data, rec); err != nil {
		t.unreadable = append(t.unreadable, Unreadable{File: name, Reason: strings.TrimPrefix(err.Error(), faultrecord.ErrInvalidRecord.Error()+": ")})
		return
	}
	if r.surfaces != nil {
		if _, ok := r.surfaces[rec.Surface]; !ok {
			t.unreadable = append(t.unreadable, Unreadable{File: name, Reason: fmt.Sprintf("surface %s is not in the registry", rec.Surface)})
			return
		}
	}
	t.read++
	t.armed++
	c := t.byClass[rec.Class]
	c.Armed++
	if rec.Fired {
		t.fired++
		c.Fired++
	} else {
		t.unfired = append(t.unfired, Unfired{File: name, RunID: rec.RunID, Test: rec.Test, Package: rec.Package,
			Surface: rec.Surface, Class: rec.Class, Leg: rec.Leg, Seed: rec.Seed, Replay: rec.Replay})
	}
	t.byClass[rec.Class] = c
}

// notARecord says why a directory entry of type t (not a regular file) is not read.
func notARecord(t fs.FileMode) string {
	switch {
	case t&fs.ModeSymlink != 0:
		return "a symbolic link: never followed (a record is a regular file a leg wrote)"
	case t&fs.ModeNamedPipe != 0:
		return "not a regular file (FIFO): never opened"
	case t&fs.ModeDevice != 0:
		return "not a regular file (device): never opened"
	case t&fs.ModeSocket != 0:
		return "not a regular file (socket): never opened"
	case t.IsDir():
		return "not a regular file (directory)"
	}
	return "not a regular file (" + t.String() + ")"
}

func countTemps(us []Unreadable) int {
	n := 0
	for _, u := range us {
		if faultdir.Classify(u.File) == faultdir.KindRecordTemp {
			n++
		}
	}
	return n
}
