// Package shard splits Bundles across controller processes by label, the way Flux
// shards: each process is started with --watch-label-selector and handles only the
// Bundles that match it.
//
// A Bundle's objects and Tombstones belong to the Bundle's shard: the controller
// copies the Bundle's values of the selector's label keys onto every object and
// Tombstone it writes, so that each process can select them by label too (its
// cache, its Tombstones, its reaper's scan) without looking up their Bundle. An
// object released by a Bundle's teardown keeps the labels, so the shard that
// released it also deletes it.
package shard
