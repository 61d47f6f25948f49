// Package e2e holds the end-to-end tests: contested's targets run as
// `go tool mage` subprocesses against a separate adopter module and
// poisoned copies of it, as a user meets them.
package e2e
