// Package faultrecord is the record format every test writes: one record per fault a test armed,
// and whether it fired.
//
// It gives:
//   - [Record], the JSON schema contested/faultrecord@1 (one file per armed fault), its
//     validation and its decoder ([ParseRecord]);
//   - [Recorder], which a test in any package of any module uses to write records atomically
//     into one results directory (see [ResultsDir]);
//   - the layout of the fault directory ([FaultDir], [Classify]) that the gate (package
//     github.com/contested/contested/internal/gate) reads, stamps and purges.
//
// # Where records go
//
// go test runs each package in that package's own directory, so a working-directory-relative
// path would scatter records beside every package. [ResultsDir] therefore resolves
// CONTESTED_RESULTS_DIR as is when it is absolute (validate always passes an absolute path),
// and otherwise (relative, or unset and so "test-results") against the module root: the
// nearest directory at or above the working directory that holds a go.mod. validate also
// exports CONTESTED_RUN_ID so that every test process of one battery writes the same run id.
//
// # Layout on disk
//
// Everything lives under the results root returned by [ResultsDir]:
//
//	<root>/fault/<run>--<test>--<leg>--<random>.json   one record per armed fault
//	<root>/fault/.record-*.tmp                         a record being written (or lost: see below)
//	<root>/fault/.gate-stamp                           written by the gate before a paired battery
//	<root>/fault/fault-report.json                     written by the gate's verification
//
// # Invariants
//
// A record file is never appended to and never visible half-written: the writer fills a
// temporary file in the same directory, fsyncs it and renames it over the final name. Temporary
// names start with a dot and end in ".tmp", so they never match "*.json". A temporary record
// file that is still there when the gate verifies means a writer died mid-write: its fault is
// missing evidence, so the gate counts it as unreadable ("incomplete write") and refuses.
//
// Nothing is written through a symbolic link: the results root must not be one, and the fault
// directory and every file in it are opened with O_NOFOLLOW relative to their parent
// (internal/atomicfile). [PrepareResultsDir] is the check a command makes once, before anything
// starts.
package faultrecord
