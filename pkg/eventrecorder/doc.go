// Package eventrecorder makes limbo's events recorder: core/v1 events (which
// `kubectl describe` shows) sent through client-go's broadcaster, with its
// event correlator set so that the events stay an audit trail.
//
// client-go's defaults suit a controller whose events repeat: an object's events
// of one reason are merged into one ("combined from similar events") once ten
// of them differ in message within ten minutes, and an object's events beyond a
// burst of 25 are dropped (one more every five minutes). limbo records each
// stamp, cancel and deletion of a Bundle's objects on the Bundle, one event per
// object: a Bundle that lets go of thirty objects would lose its record of the
// last ones. Here events are merged and rate-limited only when they are the same
// event — the same object, type, reason and message — so a repeated warning is
// still counted and held back, and no two objects' deletions are ever one event.
//
// client-go's broadcaster drops what does not fit in its channels of 1,000
// while one goroutine sends the events one by one; its sink here is a send
// queue (sendQueue) that holds up to 10,000, so a mass deletion keeps its
// audit trail.
package eventrecorder
