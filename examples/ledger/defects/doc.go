// Package defects proves the ledger's oracles have teeth: each of its
// tests builds the ledger with one planted defect and shows the contract
// meant to catch it turn RED. It lives apart from the ledger's own
// contracts so that the battery's shards balance and a change to the
// contracts' tests alone does not rerun it.
package defects
