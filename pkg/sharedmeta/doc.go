// Package sharedmeta lets the cached copies of objects that carry the same
// labels, annotations, owner references or managedFields hold one copy of them.
//
// The objects a Bundle creates mostly do: every one carries the Bundle's label
// and its owner reference, and objects of the same shape have the same field set.
// In Go a one-entry label map alone takes about 350 bytes, an owner reference
// about 170, so at 10,000 cached objects sharing them is several MiB of the
// controller's heap.
//
// Sharing is safe only because cached objects are read-only: reads through
// controller-runtime's cache return deep copies, and event handlers only read.
// A Table must never be used for objects that anything modifies in place.
package sharedmeta
