// Package faultrecord records every fault a test armed and whether it fired, and verifies a
// run's records through the six phases of the program-verification gate.
//
// It gives:
//   - [Record], the JSON schema contested/faultrecord@1 (one file per armed fault);
//   - [Recorder], which a test in any package of any module uses to write records atomically
//     into one results directory (see [ResultsDir]);
//   - [WriteStamp] and [Purge], which bracket a paired run (validate) so that "the battery
//     executed faults" is a statement about this run rather than about the disk;
//   - [Verify], the six phases, which writes fault/fault-report.json and refuses a run whose
//     faults did not fire, did not run at all, or cannot be proven to belong to this run;
//   - [Report.WriteSummary], the human summary, coloured through fatih/color.
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
//	<root>/fault/.gate-stamp                           written before a paired battery
//	<root>/fault/fault-report.json                     written by Verify
//
// # Invariants
//
// A record file is never appended to and never visible half-written: the writer fills a
// temporary file in the same directory, fsyncs it and renames it over the final name. Temporary
// names start with a dot and end in ".tmp", so they never match "*.json". A temporary record
// file that is still there when Verify runs means a writer died mid-write: its fault is missing
// evidence, so Verify counts it as unreadable ("incomplete write") and the gate refuses.
//
// Nothing is read, written or deleted through a symbolic link: the results root must not be one,
// and the fault directory and every file in it are opened with O_NOFOLLOW relative to their
// parent (internal/atomicfile). Readers open non-blocking, take regular files only and cap their
// size, so a FIFO or a link to /dev/zero among the records is listed as unreadable, never waited
// on or read. [PrepareResultsDir] is the check a command makes once, before anything starts.
//
// Verify never deletes anything except the gate stamp, and only after a successful paired
// verification (the stamp is single-use). A refused run leaves every file in place for triage.
package faultrecord
