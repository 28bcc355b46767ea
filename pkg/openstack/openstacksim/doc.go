// Package openstacksim is an in-memory simulator of the parts of OpenStack that
// route-gc uses — Keystone v3, Neutron routers and Nova servers — served on one
// listener, each service under its own path prefix as a devstack puts them. It
// speaks the real paths, headers, status codes and JSON shapes, so gophercloud
// works against it unchanged:
//
//	Keystone (/identity)
//	GET  /identity/v3                     version document
//	POST /identity/v3/auth/tokens         password (user name+domain or id, scope project id) or
//	                                      application_credential (id, secret) → 201, X-Subject-Token,
//	                                      {"token":{…,"catalog":[identity, network, compute]}}, each
//	                                      in Config.Region, or in Config.CatalogRegions (another
//	                                      region's endpoints under /regions/<region>/…);
//	                                      400 malformed; 401 bad credentials (SetCredentials and
//	                                      SetApplicationCredentialSecret change them, and revoke
//	                                      every token issued)
//	Neutron (/network)
//	GET  /network/                        version document {"versions":[{"id":"v2.0",…}]}
//	GET  /network/v2.0/extensions         {"extensions":[…]}
//	GET  /network/v2.0/extensions/{alias} {"extension":{…}}; 404 when not enabled
//	GET  /network/v2.0/routers/{id}       {"router":{…,"project_id","routes":[…],"revision_number":N}};
//	                                      404, also for a router of another project (SetRouterProject)
//	                                      unless Config.Admin (then on every router call)
//	PUT  /network/v2.0/routers/{id}       {"router":{"routes":[…]}} replaces the list; with
//	                                      "If-Match: revision_number=N", 412 unless the router is at N;
//	                                      400 invalid route or too many routes
//	PUT  /network/v2.0/routers/{id}/add_extraroutes     adds (idempotent)   } only while the
//	PUT  /network/v2.0/routers/{id}/remove_extraroutes  removes (missing ok) } extension is enabled
//	Nova (/compute)
//	GET  /compute/                        version document {"versions":[{"id":"v2.1","version":max,…}]}
//	GET  /compute/v2.1/                   version document {"version":{"id":"v2.1","version":max,"min_version":"2.1",…}}
//	GET  /compute/v2.1/servers/detail?limit=&marker=   a page, newest first, of at most
//	                                      Config.MaxLimit servers (also without a limit), with
//	                                      servers_links rel=next (the request's parameters and
//	                                      marker=<last id>) when the page is full; 400 unknown marker.
//	                                      Servers of a down cell (SetCellDown): from microversion
//	                                      2.69, to a request with no parameter but all_tenants,
//	                                      stubs {"id","status":"UNKNOWN","tenant_id","created",
//	                                      "links"}; otherwise (below 2.69, or with limit, marker,
//	                                      sort_key, sort_dir or a filter) left out (Nova's default),
//	                                      or 500 with Config.FailListingOnDownCell
//	POST /compute/v2.1/servers            {"server":{"name","networks":[{"fixed_ip"}],…}} → 202, ACTIVE
//	                                      at once with those addresses; 400 without a name
//	DELETE /compute/v2.1/servers/{id}     204; 404
//
// Every call except the version documents and token creation needs a valid
// X-Auth-Token (401 otherwise, which makes gophercloud re-authenticate). Every
// change to a router bumps its revision_number, as Neutron does. Nova's calls
// take a compute microversion as Nova does ("OpenStack-API-Version: compute
// X.Y", else "X-OpenStack-Nova-API-Version: X.Y"; "latest" is the maximum, none
// is 2.1): 400 when malformed, 406 outside 2.1 to Config.ComputeMaxVersion; the
// answer names the version it served in both headers.
//
// Test controls (AddRouter, SetRoutes, SetRouterProject, AddServer, DeleteServer, SetAtomic,
// SetCellDown, SetOutage, Inject, Before, ExpireTokens, SetCredentials, Calls, …) are safe for
// concurrent use with request handling.
package openstacksim
