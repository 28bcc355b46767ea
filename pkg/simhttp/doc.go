// Package simhttp is what limbo's simulators of external APIs (StorageOS,
// OpenStack) share: serving a handler on an address with a graceful stop, JSON
// responses, and random identifiers in the formats those APIs use.
package simhttp
