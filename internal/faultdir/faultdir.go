// Package faultdir is the layout of a results directory's fault
// directory: the names in it, the name a new record takes, and what each
// file there is, so that the writer and the gate agree on every name.
package faultdir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
)

// Names inside the fault directory (docs/reference/artifacts.md).
const (
	// Name is the base name of the fault directory under the results root.
	Name = "fault"
	// StampName is the gate stamp's file name. Its mtime is the reference of phase 1.
	StampName = ".gate-stamp"
	// ReportName is the report the gate writes.
	ReportName = "fault-report.json"

	// RecordExt is what every record file name ends with, and the only pattern readers take as
	// a record.
	RecordExt = ".json"
	// RecordTempPattern is a temporary record file's name: ".record-*.tmp". It starts with a
	// dot and does not end in ".json", so it can never be taken for a record.
	RecordTempPattern = recordTempPrefix + "*" + tempExt
	recordTempPrefix  = ".record-"
	tempExt           = ".tmp"
	// StampTempPattern and ReportTempPattern are the temporary names of the stamp and report
	// while the gate writes them. They are not evidence about faults; the gate's purge removes
	// leftovers.
	StampTempPattern  = ".gate-stamp-*.tmp"
	ReportTempPattern = ".fault-report-*.tmp"
)

// Of is the fault directory under a results root: <root>/fault.
func Of(root string) string { return filepath.Join(root, Name) }

// Is reports whether dir names a fault directory. It is a name check only; it is what
// keeps the gate's purge and stamp consumption from ever acting on another directory.
func Is(dir string) bool {
	return filepath.Base(filepath.Clean(dir)) == Name
}

// Errors that callers branch on with [errors.Is].
var (
	// ErrUnreadable means the fault directory could not be listed (permission denied, not a
	// directory). The gate refuses: it cannot tell whether faults ran.
	ErrUnreadable = errors.New("results directory unreadable")
	// ErrNotFaultDir means a stamp, purge or verification was asked for a directory that is not
	// a fault directory (its base name is not "fault"). It guards against deleting elsewhere.
	ErrNotFaultDir = errors.New("not a fault directory")
)

// maxNamePart bounds each variable part of a record file name so that the whole name stays
// well below the 255-byte limit of common file systems.
const maxNamePart = 60

// RecordName returns a name unique per record: run id, test, leg and 48 random bits, all
// sanitized to [A-Za-z0-9._-], joined by "--" and ending in ".json". It never starts with a dot
// (those are temporary names) and never equals ReportName.
func RecordName(runID, test, leg string) string {
	var b strings.Builder
	b.Grow(3*maxNamePart + 24)
	writeSanitized(&b, runID)
	b.WriteString("--")
	writeSanitized(&b, test)
	b.WriteString("--")
	writeSanitized(&b, leg)
	fmt.Fprintf(&b, "--%012x%s", rand.Uint64()&0xffffffffffff, RecordExt)
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

// Kind is what a file in a fault directory is, decided by name alone (no regex, no I/O).
type Kind int

// The kinds of file in a fault directory.
const (
	KindOther      Kind = iota // ignored by the gate, untouched by its purge
	KindRecord                 // *.json except the report (dot names too, as Glob would): a record
	KindRecordTemp             // .record-*.tmp: a record write that did not finish
	KindOtherTemp              // leftover stamp or report temp: the purge removes it
	KindReport                 // fault-report.json
	KindStamp                  // .gate-stamp
)

// Classify says what the file called name in a fault directory is.
func Classify(name string) Kind {
	switch {
	case name == ReportName:
		return KindReport
	case name == StampName:
		return KindStamp
	case strings.HasPrefix(name, recordTempPrefix) && strings.HasSuffix(name, tempExt):
		return KindRecordTemp
	case strings.HasSuffix(name, tempExt) &&
		(strings.HasPrefix(name, ".gate-stamp-") || strings.HasPrefix(name, ".fault-report-")):
		return KindOtherTemp
	case strings.HasSuffix(name, RecordExt):
		return KindRecord
	}
	return KindOther
}

// maxFileName caps SafeFileName's result in bytes: with an extension (".json", ".md") and
// a temporary file's prefix and suffix it stays far below the 255-byte limit of common file
// systems.
const maxFileName = 120

// digestLen is the number of hex digits of the digest SafeFileName appends (48 bits).
const digestLen = 12

// SafeFileName is [SafeName] for a file that must not be confused with another's, such as
// ladder/<test>.json: two different names never give the same result (short of a 48-bit
// digest collision), and the result is at most 120 bytes of [A-Za-z0-9._-], never starting
// with a dot.
//
// A name SafeName keeps as it is, short enough and not ending like a digest, is returned
// unchanged. Any other gets SafeName's form, cut to fit, then "-" and 12 hex digits of the
// SHA-256 of the original name: TestA_b stays TestA_b, TestA/b becomes TestA_b-<digest>.
func SafeFileName(s string) string {
	safe := SafeName(s)
	if safe == s && len(s) <= maxFileName && !endsInDigest(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	suffix := "-" + hex.EncodeToString(sum[:digestLen/2])
	if len(safe) > maxFileName-len(suffix) {
		safe = safe[:maxFileName-len(suffix)]
	}
	return safe + suffix
}

// endsInDigest reports whether s ends like SafeFileName's suffix: "-" and 12 lowercase hex
// digits. Such a name is digested too, so that it cannot equal another name's digested form.
func endsInDigest(s string) bool {
	if len(s) < digestLen+1 || s[len(s)-digestLen-1] != '-' {
		return false
	}
	for _, c := range s[len(s)-digestLen:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
