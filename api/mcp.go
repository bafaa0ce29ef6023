package api

// MCPRoutes are the MCP endpoint's routes: the Model Context Protocol, not operations of
// the API description.
var MCPRoutes = []string{}

// mcpRoutes mounts the MCP server at MCPPath.
func (s *Server) mcpRoutes() {}
