// Package faultrecord is the record format every contested test writes:
// one record per fault a test armed, and whether it fired.
//
// It gives:
//   - [Record], the JSON schema contested/faultrecord@1 (one file per armed
//     fault), its validation ([Record.Validate]) and its decoder
//     ([ParseRecord], [ParseRecordInto]);
//   - [Recorder], which a test in any package of any module uses to write
//     records atomically into one results directory.
//
// The gate (validate, program-gate) reads the records back, stamps and
// purges the fault directory; docs/reference/records.md describes the
// format and docs/reference/artifacts.md where it lives.
//
// # Where records go
//
// go test runs each package in that package's own directory, so a
// working-directory-relative path would scatter records beside every
// package. A Recorder writes under the results directory it is given
// ([WithResultsDir]), which validate hands every test process as an
// absolute CONTESTED_RESULTS_DIR, with the run id every test process of
// one battery shares (CONTESTED_RUN_ID).
//
// # Layout on disk
//
//	<root>/fault/<run>--<test>--<leg>--<random>.json   one record per armed fault
//	<root>/fault/.record-*.tmp                         a record being written (or lost: see below)
//	<root>/fault/.gate-stamp                           written by the gate before a paired battery
//	<root>/fault/fault-report.json                     written by the gate's verification
//
// # Invariants
//
// A record file is never appended to and never visible half-written: the
// writer fills a temporary file in the same directory, fsyncs it and
// renames it over the final name. Temporary names start with a dot and end
// in ".tmp", so they never match "*.json". A temporary record file that is
// still there when the gate verifies means a writer died mid-write: its
// fault is missing evidence, so the gate counts it as unreadable
// ("incomplete write") and refuses.
//
// Nothing is written through a symbolic link: the results root must not
// be one, and the fault directory and every file in it are opened without
// following links relative to their parent.
package faultrecord
