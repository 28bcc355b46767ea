package plugin

// Len is how many clients c keeps.
func (c *ClientCache[C]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	return c.clients.Len()
}
