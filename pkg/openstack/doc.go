// Package openstack is the small part of OpenStack that route-gc needs, through
// gophercloud v2: Keystone v3 authentication (application credential or
// username, password and project), one Neutron router's static routes (read,
// atomic removal with the extraroute-atomic extension, or a whole-list update
// guarded by the router's revision_number), and the addresses of the project's
// Nova servers, all pages.
//
// # Wire format
//
//   - POST {authURL}/auth/tokens; the token comes back in X-Subject-Token, the
//     service catalog in the body; every other call sends X-Auth-Token. A 401
//     re-authenticates once (gophercloud's AllowReauth); one Keystone refused
//     (401) is not sent again for refusedlogin.Retry.
//   - Neutron: the catalog's "network" endpoint serves its version document at
//     its root (read once by gophercloud to check that v2 is there), then
//     GET /v2.0/extensions/{alias} (404: not enabled),
//     GET /v2.0/routers/{id} → {"router":{"routes":[{"destination","nexthop"}],"revision_number",…}},
//     PUT /v2.0/routers/{id} {"router":{"routes":[…]}} with
//     "If-Match: revision_number=N" (412 when the router changed meanwhile),
//     PUT /v2.0/routers/{id}/remove_extraroutes {"router":{"routes":[…]}}
//     (removing a route that is not there is allowed).
//   - Nova: GET {compute}/servers/detail without parameters (Nova answers a
//     page of its max_limit, 1000 by default), following servers_links
//     rel=next (…?marker=<last id>) until there is none or a page is empty;
//     each server's addresses are
//     {"<network>":[{"addr","version","OS-EXT-IPS:type":"fixed"|"floating"}]}.
//     Where the compute endpoint's version document (GET {compute}/ →
//     {"version":{"version":"<max>","min_version":…}}) allows it, the listing
//     asks for microversion 2.69 (X-OpenStack-Nova-API-Version and
//     OpenStack-API-Version: compute 2.69), at which Nova lists a down cell's
//     servers as stubs {"id","status":"UNKNOWN","tenant_id","created","links"}
//     — to a request without paging, sorting or filter parameters only, so
//     on the first page only: below 2.69, and on the pages after the first,
//     Nova leaves them out (or answers 500 with
//     list_records_by_skipping_down_cells = false). Servers.Unknown counts
//     the stubs, Servers.Pages the pages.
//
// # Errors
//
// HTTP errors are gophercloud's; ErrNotFound and ErrRevisionMismatch are
// matched with errors.Is for the codes callers act on (404, 412), and
// ErrUnauthorized for Keystone's refusal of the credentials, at the first login
// or at a re-authentication (or its refusal remembered). A 404 on a
// router says "not found or not visible to these credentials": Neutron answers
// it for a router the token may not see as for one that is gone. Every call
// runs under the caller's context and each HTTP request under Config.Timeout.
package openstack
