// Package stages holds the end-to-end tests of the targets beside
// validate: cluster-tests, mutants, packages of an adopter that cannot
// run, and the adopter fixture itself (the README's magefile, a tidy
// go.mod).
package stages
