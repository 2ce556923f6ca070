package tools

import "fmt"

// Registry holds one actor's tools in declaration order. Order matters: the
// advertised schema list and golden-action suffix resolution both follow it, so
// it is a slice with an index, never a bare map. A Registry is built once at
// registration and read-only afterwards, so concurrent readers need no lock.
type Registry struct {
	entries []*Entry
	byName  map[string]*Entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]*Entry{}}
}

// Add appends e; a name already present is refused.
func (r *Registry) Add(e *Entry) error {
	if _, ok := r.byName[e.Name]; ok {
		return fmt.Errorf("add tool %q: %w", e.Name, ErrDuplicate)
	}
	r.entries = append(r.entries, e)
	r.byName[e.Name] = e
	return nil
}

// Lookup finds a tool by exact name.
func (r *Registry) Lookup(name string) (*Entry, bool) {
	e, ok := r.byName[name]
	return e, ok
}

// Entries returns the tools in declaration order (the caller must not modify it).
func (r *Registry) Entries() []*Entry { return r.entries }

// Names returns the tool names in declaration order.
func (r *Registry) Names() []string {
	names := make([]string, len(r.entries))
	for i, e := range r.entries {
		names[i] = e.Name
	}
	return names
}

// Len is the number of tools.
func (r *Registry) Len() int { return len(r.entries) }
