// Package ci holds the CI files an adopter copies: GitHub Actions
// workflows and GitLab CI files that run validate in one job, or as
// shards and a merge; its tests lint them and hold every command they run
// to the targets that exist.
package ci
