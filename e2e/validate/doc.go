// Package validate holds the end-to-end tests of validate as a developer
// and a CI job run it on the adopter fixture: a certified run, one verdict
// with contested, a battery timeout, GitHub Actions, the warm layer, and
// shards merged as one run. Each test runs the targets as subprocesses in
// its own copy of the adopter (see e2etest).
package validate
