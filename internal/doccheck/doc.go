// Package doccheck holds the tests that keep the manual (README.md and
// docs/) true to the code: its Go compiles, its go tool mage commands name
// real targets and flags, its links resolve, its nav lists every page, its
// reference pages name every variable and registry key, and the public
// packages document every exported name.
package doccheck
