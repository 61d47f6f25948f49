// Package reuse holds the end-to-end tests of validate's reuse: adopter
// modules run through sequences of changes (nothing, the component, a
// library it links, the registry, build tags, the level), each validate's
// reuse compared with what the change could reach; tampered certificates;
// CI runs in full; and the time a run that reuses everything takes against
// a full one.
package reuse
