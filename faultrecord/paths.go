package faultrecord

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Environment variables this package reads.
const (
	// EnvResultsDir names the root of all artifacts (DESIGN §4.2). Default "test-results".
	EnvResultsDir = "CONTESTED_RESULTS_DIR"
	// EnvRunID names the run a record belongs to. validate exports the stamp's run id through
	// it so that every test process of one battery writes the same run id.
	EnvRunID = "CONTESTED_RUN_ID"
)

// DefaultResultsDir is the results root, relative to the module root, when EnvResultsDir is
// unset.
const DefaultResultsDir = "test-results"

// Names inside the fault directory (DESIGN §4.3).
const (
	// FaultDirName is the base name of the fault directory under the results root.
	FaultDirName = "fault"
	// StampName is the gate stamp's file name. Its mtime is the reference of phase 1.
	StampName = ".gate-stamp"
	// ReportName is the report [Verify] writes.
	ReportName = "fault-report.json"

	// recordExt is what every record file name ends with, and the only pattern readers take as
	// a record.
	recordExt = ".json"
	// recordTempPrefix and tempExt make a temporary record file name: ".record-*.tmp". It
	// starts with a dot and does not end in ".json", so it can never be taken for a record.
	recordTempPrefix = ".record-"
	tempExt          = ".tmp"
	// stampTempPattern and reportTempPattern are the temporary names of the stamp and report
	// while they are written. They are not evidence about faults; Purge removes leftovers.
	stampTempPattern  = ".gate-stamp-*.tmp"
	reportTempPattern = ".fault-report-*.tmp"
)

// ResultsDir returns the absolute root of all artifacts.
//
// CONTESTED_RESULTS_DIR is used as is when it is absolute. When it is relative, or unset
// (default "test-results"), it is resolved against the module root: the nearest directory at
// or above the working directory that holds a go.mod. It is never resolved against the
// working directory itself, because go test runs each package in that package's own directory
// and the records of one run must land in one place whatever the package. validate passes an
// absolute path, so adopters' modules and nested modules all write to the same root.
//
// It returns an error wrapping [ErrNoModuleRoot] when the path is relative and no go.mod is
// found.
func ResultsDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("resolve results dir: %w", err)
	}
	return resolveResultsDir(os.Getenv(EnvResultsDir), wd)
}

// resolveResultsDir is ResultsDir with its inputs made explicit, for tests.
func resolveResultsDir(env, wd string) (string, error) {
	if env == "" {
		env = DefaultResultsDir
	}
	if filepath.IsAbs(env) {
		return filepath.Clean(env), nil
	}
	root, err := ModuleRoot(wd)
	if err != nil {
		return "", fmt.Errorf("resolve results dir %q: %w", env, err)
	}
	return filepath.Join(root, env), nil
}

// ModuleRoot walks up from dir to the nearest directory holding a go.mod
// file: the root of the module a test in dir belongs to.
func ModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		fi, err := os.Stat(filepath.Join(dir, "go.mod"))
		if err == nil && !fi.IsDir() {
			return dir, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("find module root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find module root from %s: %w", dir, ErrNoModuleRoot)
		}
		dir = parent
	}
}

// FaultDir is the fault directory under a results root: <root>/fault.
func FaultDir(root string) string { return filepath.Join(root, FaultDirName) }

// isFaultDir reports whether dir names a fault directory. It is a name check only; it is what
// keeps Purge and stamp consumption from ever acting on another directory.
func isFaultDir(dir string) bool {
	return filepath.Base(filepath.Clean(dir)) == FaultDirName
}

// RunID returns CONTESTED_RUN_ID when it is set, otherwise a fresh id such as
// "20261129T101500Z-4f2a" (UTC time to the second plus 4 random hex digits). A fresh id is
// unique per process only, which is why validate exports one id for the whole battery.
func RunID() string {
	if id := os.Getenv(EnvRunID); id != "" {
		return id
	}
	return NewRunID(time.Now())
}

// NewRunID returns a run id for time t: t in UTC as 20060102T150405Z, a dash and 4 random hex
// digits.
func NewRunID(t time.Time) string {
	return fmt.Sprintf("%s-%04x", t.UTC().Format("20060102T150405Z"), rand.Uint32()&0xffff)
}

// maxNamePart bounds each variable part of a record file name so that the whole name stays
// well below the 255-byte limit of common file systems.
const maxNamePart = 60

// recordFileName returns a name unique per record: run id, test, leg and 48 random bits, all
// sanitized to [A-Za-z0-9._-], joined by "--" and ending in ".json". It never starts with a dot
// (those are temporary names) and never equals ReportName.
func recordFileName(runID, test, leg string) string {
	var b strings.Builder
	b.Grow(3*maxNamePart + 24)
	writeSanitized(&b, runID)
	b.WriteString("--")
	writeSanitized(&b, test)
	b.WriteString("--")
	writeSanitized(&b, leg)
	fmt.Fprintf(&b, "--%012x%s", rand.Uint64()&0xffffffffffff, recordExt)
	return b.String()
}

func writeSanitized(b *strings.Builder, s string) {
	if len(s) > maxNamePart {
		s = s[:maxNamePart]
	}
	b.WriteString(SafeName(s))
}

// SafeName makes a name (a test id, a leg) usable in file and proxy
// names: every byte outside [A-Za-z0-9._-] becomes "_", and so does a
// leading dot, so the result never names a hidden or temporary file.
// TestStoreContract/reset becomes TestStoreContract_reset.
func SafeName(s string) string {
	if s == "" {
		return "_"
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		case c == '.' && i > 0:
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Kinds of file in a fault directory, decided by name alone (no regex, no I/O).
type fileKind int

const (
	kindOther      fileKind = iota // ignored by Verify, untouched by Purge
	kindRecord                     // *.json except the report (dot names too, as Glob would): a record
	kindRecordTemp                 // .record-*.tmp: a record write that did not finish
	kindOtherTemp                  // leftover stamp or report temp: Purge removes it
	kindReport                     // fault-report.json
	kindStamp                      // .gate-stamp
)

func classify(name string) fileKind {
	switch {
	case name == ReportName:
		return kindReport
	case name == StampName:
		return kindStamp
	case strings.HasPrefix(name, recordTempPrefix) && strings.HasSuffix(name, tempExt):
		return kindRecordTemp
	case strings.HasSuffix(name, tempExt) &&
		(strings.HasPrefix(name, ".gate-stamp-") || strings.HasPrefix(name, ".fault-report-")):
		return kindOtherTemp
	case strings.HasSuffix(name, recordExt):
		return kindRecord
	}
	return kindOther
}
