// Package flakes keeps the history of test outcomes across runs, so that
// a flaky battery is triaged from many runs rather than one: how often a
// test and each of its legs failed over the last runs, the first commit it
// failed on, and the seeds that failed.
//
// Every validate, contested and arbitrate appends one [Outcome] per test
// and subtest it ran to a
// [Store]: by default an append-only file of JSON lines under the results
// directory ([FileName]), safe for concurrent writers on one machine.
// [Summarize] reads a test's trend from it.
package flakes
