// Package routegc is the route-gc plugin: it removes static routes of an
// OpenStack (Neutron) router that point into the cluster CIDR at a next hop that
// is no longer an address of any Nova server of the project — the routes left
// behind by deleted nodes, which otherwise shadow the routes of new nodes that
// reuse a pod CIDR. It is modelled on kubernikus's routegc, through limbo's
// soft-delete engine: each orphaned route is a Tombstone (item kind
// NeutronRoute, id "<destination>-><nexthop>") with the resource's
// deletionDelay, and a route whose server comes back is cancelled.
//
// Safety, where the original had none:
//   - An empty or failed server listing is "unknown": the plan fails (status
//     message, Warning event) and nothing is orphaned; a failed router read
//     changes nothing.
//   - So is a listing with a down Nova cell's servers in it: at compute
//     microversion 2.69, asked for where the cloud has it, Nova lists them as
//     stubs with status UNKNOWN and no addresses, to a request without paging
//     parameters: the listing's first. Below 2.69, and on the pages after the
//     first (a marker), it leaves them out by default, which no client can
//     see; a listing of several pages says so in the message and an event.
//   - A router of another project than the credentials' is refused: Nova
//     lists the token's project's servers only, and every route would look
//     orphaned (an admin token sees any project's router).
//   - Removal is atomic (remove_extraroutes) where Neutron has
//     extraroute-atomic, otherwise a whole-list update guarded by the router's
//     revision_number (If-Match), re-read on 412: a route another client adds
//     meanwhile is never lost.
//   - Before removing, the route's next hop is checked again against a fresh
//     server listing: one whose request started after the removal was asked
//     for, with the same client — the removals queued behind a running one
//     (routes that fall due together) share one, a plan's or the first
//     removal's, never an older, a failed or one more than 10 s old. A 404 on the router is an
//     error, retried, never "the route is gone": Neutron answers it for a
//     router the token may not see.
//   - Routes outside the cluster CIDR, or whose destination does not parse, are
//     never touched.
//
// OpenStack is polled every `interval` (default 5m) with a jitter of 0 to +50
// %; between polls a plan reuses the last inventory. One Bundle resource never
// runs two passes (or a pass and a removal) at once.
package routegc
