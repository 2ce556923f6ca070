package pyjson

// Member is one key/value pair of an Object.
type Member struct {
	Key   string
	Value any
}

// Object is a JSON object that keeps its keys in insertion order, like a Python
// dict, so tool outputs list fields in the order the records were written. Lookups
// are linear: records here have a handful of fields.
type Object struct {
	members []Member
}

// NewObject returns an object holding members in order; a repeated key keeps its
// first position and its last value, as a Python dict literal does.
func NewObject(members ...Member) *Object {
	o := &Object{members: make([]Member, 0, len(members))}
	for _, m := range members {
		o.Set(m.Key, m.Value)
	}
	return o
}

// Get returns the value under key.
func (o *Object) Get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	for _, m := range o.members {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// Set replaces the value under key in place, or appends key at the end.
func (o *Object) Set(key string, v any) {
	for i := range o.members {
		if o.members[i].Key == key {
			o.members[i].Value = v
			return
		}
	}
	o.members = append(o.members, Member{Key: key, Value: v})
}

// Len returns the number of keys.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.members)
}

// Members returns the pairs in order. The slice must not be modified.
func (o *Object) Members() []Member {
	if o == nil {
		return nil
	}
	return o.members
}

// Clone returns a deep copy of v (Numbers and strings are immutable and shared).
func Clone(v any) any {
	switch t := v.(type) {
	case *Object:
		if t == nil {
			return (*Object)(nil)
		}
		c := &Object{members: make([]Member, len(t.members))}
		for i, m := range t.members {
			c.members[i] = Member{Key: m.Key, Value: Clone(m.Value)}
		}
		return c
	case []any:
		if t == nil {
			return []any(nil)
		}
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = Clone(e)
		}
		return c
	default:
		return v
	}
}

// Equal reports whether a and b are the same JSON value, including the int/float
// kind of numbers (1 and 1.0 differ, as they do in the stable hash) and key order.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case Number:
		y, ok := b.(Number)
		return ok && x.isFloat == y.isFloat && Cmp(x, y) == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Object:
		y, ok := b.(*Object)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for i, m := range x.Members() {
			n := y.members[i]
			if m.Key != n.Key || !Equal(m.Value, n.Value) {
				return false
			}
		}
		return true
	}
	return false
}
