package openstacksim

// The demo state `limbo dev --simulators` starts with, which examples/route-gc
// walks through: a cluster router with routes into the pod CIDR 198.19.0.0/16,
// two live nodes, and one route left behind by a node that is gone.
const (
	DemoRouterID    = "8c1e6f0a-3b5d-4e2f-9a7c-1d2e3f4a5b6c"
	DemoClusterCIDR = "198.19.0.0/16"
	DemoNode1ID     = "0b7e2d6a-1c4f-4a8e-b3d9-5f6a7b8c9d01"
	DemoNode2ID     = "0b7e2d6a-1c4f-4a8e-b3d9-5f6a7b8c9d02"
)

// DemoRoutes are the demo router's routes: to node-1, to node-2, to a deleted
// node (the orphan), and one outside the cluster CIDR (never touched).
var DemoRoutes = []Route{
	{Destination: "198.19.1.0/24", NextHop: "10.180.0.3"},
	{Destination: "198.19.2.0/24", NextHop: "10.180.0.4"},
	{Destination: "198.19.3.0/24", NextHop: "10.180.0.5"},
	{Destination: "10.0.0.0/8", NextHop: "10.180.0.1"},
}

// LoadDemo adds the demo router and servers.
func (s *Server) LoadDemo() {
	s.AddRouter(DemoRouterID, "cluster-router", DemoRoutes...)
	s.AddServer(NovaServer{ID: DemoNode1ID, Name: "node-1", Addresses: map[string][]Address{"cluster-net": {{Addr: "10.180.0.3"}}}})
	s.AddServer(NovaServer{ID: DemoNode2ID, Name: "node-2", Addresses: map[string][]Address{"cluster-net": {{Addr: "10.180.0.4"}, {Addr: "172.24.4.20", Type: "floating"}}}})
}
