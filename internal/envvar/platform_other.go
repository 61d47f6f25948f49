//go:build !linux

package envvar

// contested runs on Linux only: its fault layer dials the containers it
// starts on their network's addresses, and its runner leans on /proc,
// parent-death signals and O_TMPFILE. On macOS or Windows, run it in a
// Linux machine or container (README, "Platform"). This line is the build
// error that says so, in every package an adopter imports.
var _ = contested_runs_on_Linux_only__see_the_README_Platform
