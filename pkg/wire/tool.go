package wire

// ToolKey names one tool of a catalog for a map: its server and its name.
// The gateway, the parent's checks and the argument validator all key tools
// by it.
type ToolKey struct{ Server, Tool string }

// Key is t's ToolKey.
func (t Tool) Key() ToolKey { return ToolKey{Server: t.Server, Tool: t.Name} }
