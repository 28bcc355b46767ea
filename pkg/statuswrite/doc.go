// Package statuswrite writes the status of a controller's objects without being
// misled by the controller's own cache.
//
// A controller decides on cached copies and skips a status write that would not
// change anything. Right after it wrote a status, its cache can still show the
// copy from before the write, and a pass on that copy would compare its result
// with the stale status: a result equal to the stale one is skipped although the
// API server holds the newer one, and since controllers drop their own status
// events, nothing corrects it. A Writer remembers the status it last wrote to each
// object until the cache shows it, and a pass starts from that status instead.
package statuswrite
