package faultrecord

import (
	"crypto/sha256"
	"encoding/hex"
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
	// ReportName is the report the gate writes.
	ReportName = "fault-report.json"

	// recordExt is what every record file name ends with, and the only pattern readers take as
	// a record.
	recordExt = ".json"
	// recordTempPrefix and tempExt make a temporary record file name: ".record-*.tmp". It
	// starts with a dot and does not end in ".json", so it can never be taken for a record.
	recordTempPrefix = ".record-"
	tempExt          = ".tmp"
	// StampTempPattern and ReportTempPattern are the temporary names of the stamp and report
	// while the gate writes them. They are not evidence about faults; the gate's purge removes
	// leftovers.
	StampTempPattern  = ".gate-stamp-*.tmp"
	ReportTempPattern = ".fault-report-*.tmp"
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

// IsFaultDir reports whether dir names a fault directory. It is a name check only; it is what
// keeps the gate's purge and stamp consumption from ever acting on another directory.
func IsFaultDir(dir string) bool {
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
	case strings.HasSuffix(name, recordExt):
		return KindRecord
	}
	return KindOther
}

// systemDirs are directories that are never a results directory: a run writes reports into
// its results directory and purges records from it, and these belong to the system or to
// everyone. Directories below them may be (a CI's /var/lib/ci/results is fine).
var systemDirs = map[string]bool{
	"/": true, "/bin": true, "/boot": true, "/dev": true, "/etc": true, "/home": true, "/lib": true,
	"/lib32": true, "/lib64": true, "/libx32": true, "/media": true, "/mnt": true, "/nix": true,
	"/opt": true, "/proc": true, "/root": true, "/run": true, "/sbin": true, "/snap": true,
	"/srv": true, "/sys": true, "/tmp": true, "/usr": true, "/var": true,
	"/usr/bin": true, "/usr/include": true, "/usr/lib": true, "/usr/lib64": true, "/usr/libexec": true,
	"/usr/local": true, "/usr/local/bin": true, "/usr/local/lib": true, "/usr/local/share": true,
	"/usr/sbin": true, "/usr/share": true, "/usr/src": true,
	"/var/cache": true, "/var/lib": true, "/var/log": true, "/var/mail": true, "/var/opt": true,
	"/var/run": true, "/var/spool": true, "/var/tmp": true, "/var/www": true,
	"/nix/store": true, "/private": true, "/private/etc": true, "/private/tmp": true, "/private/var": true,
	"/Applications": true, "/Library": true, "/System": true, "/Users": true, "/Volumes": true,
}

// kernelDirs are file systems of the kernel: nothing under them is ever a results directory.
var kernelDirs = []string{"/proc", "/sys", "/dev"}

// PrepareResultsDir checks and readies dir, an absolute results directory, once, before a
// command starts anything, and returns it with its ancestors' symbolic links resolved: the path
// every later step (and the battery, through CONTESTED_RESULTS_DIR) uses. moduleRoot is the
// module the command runs in ("" when there is none).
//
// dir is refused, with an error wrapping [ErrBadResultsDir] that says what to set, when it is
// `/`, a system directory (/etc, /usr, /var, /home, /tmp, ...) or inside /proc, /sys or /dev,
// the home directory itself, the module root itself or one of its ancestors; when it is a
// symbolic link (the link's target is named: set the variable to it if that is meant), a file
// or anything else that is not a directory; when it is read-only (no write permission bit, even
// for root, or a write probe fails); and when an entry directly in it is a symbolic link
// (nothing under the results directory is ever followed). A missing dir is created (0755).
func PrepareResultsDir(dir, moduleRoot string) (string, error) {
	fix := fmt.Sprintf("set %s to a directory of its own (the default is %s under the module root)", EnvResultsDir, DefaultResultsDir)
	bad := func(why, fix string) error {
		return fmt.Errorf("%w: %s %s; %s", ErrBadResultsDir, dir, why, fix)
	}
	if !filepath.IsAbs(dir) {
		return "", bad("is not an absolute path", fix)
	}
	dir = filepath.Clean(dir)
	if why := refusedPlace(dir, moduleRoot); why != "" {
		return "", bad(why, fix)
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", bad(fmt.Sprintf("cannot be created (%v)", unwrapPath(err)), fix)
		}
		fi, err = os.Lstat(dir)
	}
	switch {
	case err != nil:
		return "", bad(fmt.Sprintf("cannot be examined (%v)", unwrapPath(err)), fix)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(dir)
		return "", bad(fmt.Sprintf("is a symbolic link to %s, and the results directory is never reached through a link", target),
			fmt.Sprintf("set %s to the directory itself if that is where artifacts belong, or remove the link", EnvResultsDir))
	case !fi.IsDir():
		what := "a file"
		if !fi.Mode().IsRegular() {
			what = "a " + fi.Mode().Type().String() + " file"
		}
		return "", bad("is "+what+", not a directory", "remove it, or "+fix)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", bad(fmt.Sprintf("cannot be resolved (%v)", unwrapPath(err)), fix)
	}
	if why := refusedPlace(real, moduleRoot); why != "" {
		return "", bad(fmt.Sprintf("resolves to %s, which %s", real, strings.TrimPrefix(why, "is ")), fix)
	}
	if fi.Mode().Perm()&0o222 == 0 {
		return "", bad(fmt.Sprintf("is read-only (mode %04o)", fi.Mode().Perm()), "make it writable (chmod u+w), or "+fix)
	}
	probe, err := os.CreateTemp(real, ".contested-probe-*")
	if err != nil {
		return "", bad(fmt.Sprintf("is not writable (%v)", unwrapPath(err)), "make it writable, or "+fix)
	}
	probe.Close()
	os.Remove(probe.Name())
	entries, err := os.ReadDir(real)
	if err != nil {
		return "", bad(fmt.Sprintf("cannot be listed (%v)", unwrapPath(err)), fix)
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(filepath.Join(real, e.Name()))
			return "", fmt.Errorf("%w: %s is a symbolic link to %s: nothing under the results directory %s is followed, written or deleted through a link; remove the link (its target is not touched)",
				ErrBadResultsDir, filepath.Join(real, e.Name()), target, real)
		}
	}
	return real, nil
}

// refusedPlace says why dir (absolute, clean) can never be a results directory, or "".
func refusedPlace(dir, moduleRoot string) string {
	if dir == "/" {
		return "is the file system root"
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" && sameDir(dir, home) {
		return "is the home directory"
	}
	if systemDirs[dir] {
		return "is a system directory"
	}
	for _, k := range kernelDirs {
		if strings.HasPrefix(dir, k+"/") {
			return "is inside " + k + ", a kernel file system"
		}
	}
	if tmp := filepath.Clean(os.TempDir()); dir == tmp {
		return "is the system's temporary directory"
	}
	if moduleRoot != "" {
		for _, mr := range variants(moduleRoot) {
			switch {
			case dir == mr:
				return "is the module root itself"
			case strings.HasPrefix(mr, dir+string(filepath.Separator)):
				return "contains the module root " + mr
			}
		}
	}
	return ""
}

// sameDir compares a with b as written and with b's links resolved.
func sameDir(a, b string) bool {
	for _, v := range variants(b) {
		if a == v {
			return true
		}
	}
	return false
}

// variants is p cleaned, and also with its links resolved when that differs.
func variants(p string) []string {
	p = filepath.Clean(p)
	out := []string{p}
	if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
		out = append(out, r)
	}
	return out
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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
