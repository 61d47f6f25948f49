// Package gate judges a run's fault records: the six phases of the program-verification gate
// (docs/concepts/gate.md), the gate stamp that pairs a verification with its battery, and the human
// summary of the fault report.
//
// It gives:
//   - [Purge] and [WriteStamp], which bracket a paired run (validate) so that "the battery
//     executed faults" is a statement about this run rather than about the disk;
//   - [Verify], the six phases, which writes fault/fault-report.json and refuses a run whose
//     faults did not fire, did not run at all, or cannot be proven to belong to this run;
//   - [ReadRecords], the gate's loader, for a caller that judges records itself;
//   - [Report.WriteSummary], the human summary, coloured through fatih/color.
//
// Records are read with the format and decoder of package faultrecord. Readers open every file
// non-blocking and relative to the open fault directory, take regular files only and cap their
// size, so a FIFO or a link to /dev/zero among the records is listed as unreadable, never
// waited on or read.
//
// Verify never deletes anything except the gate stamp, and only after a successful paired
// verification (the stamp is single-use). A refused run leaves every file in place for triage.
// Its subpackages judge and explain beyond the six phases: verdict (the ten leg verdicts),
// contract (a surface judged in isolation), ladder (arbitration) and report (its formats, one file each).
package gate
