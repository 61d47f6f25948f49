// Package verdict holds the end-to-end tests of what the gate and the
// ladder refuse and explain: poisoned record sets refused at their phase,
// bad input that exits 2 naming the file and line, an idle leg, the flake
// history behind arbitrate, and a neighbour that saturates the machine.
package verdict
