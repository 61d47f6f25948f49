// Package e2e holds the end-to-end tests: contested's targets run as
// subprocesses against a separate adopter module and poisoned copies of
// it, as a user meets them: the adopter's magefile compiled once by `go
// tool mage -compile` (what `go tool mage` builds and runs), and `go tool
// mage` itself where its own path is the point. The tests run in parallel
// (each in its own copy of the adopter, on the package's shared fault
// layer), except those that bring a layer of their own up and down and
// check what it leaves: they run alone, before the others.
package e2e
