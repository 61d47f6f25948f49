// Package safety holds the end-to-end tests of what a run must never do:
// act through a linked or foreign results directory, leak a secret into
// any output or artifact, or leave anything running after SIGTERM or a
// second Ctrl-C. The signal tests bring a layer of their own up and down
// and check what it leaves, so they run alone, before the others.
package safety
