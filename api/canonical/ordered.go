package canonical

import (
	"cmp"
	"iter"
	"slices"
	"strings"
)

// Insertion order: Python's json.loads builds dicts that remember the order of their
// keys, and json.dumps without sort_keys writes them in that order. A server that
// replaces a Python one (the example shop) must return the same text, so an Object can
// carry that order next to its sorted members. Everything else (Get, At, All, Keys,
// Equal, Marshal, Hash, Indent) keeps working in key order and ignores it: the
// canonical form sorts keys, and Python's dict == ignores order too.

// emptyOrder marks an ordered Object without members. It has no capacity, so an
// append to it never writes into shared memory.
var emptyOrder = []int32{}

// NewOrderedObject builds an Object that remembers the order of members, like a
// Python dict filled by assigning them in turn: a repeated key keeps its first
// position and takes its last value (json.loads does the same).
func NewOrderedObject(members ...Member) Object { return orderedObject(members) }

// Ordered reports whether o remembers an insertion order (NewOrderedObject, or
// ParseWith with KeepOrder, or an Object derived from one of those).
func (o Object) Ordered() bool { return o.order != nil }

// InOrder iterates over the members in insertion order, or in key order when o has
// no insertion order.
func (o Object) InOrder() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) {
		for i := range o.members {
			m := o.inOrderAt(i)
			if !yield(m.Key, m.Value) {
				return
			}
		}
	}
}

// inOrderAt returns the i-th member in insertion order.
func (o Object) inOrderAt(i int) *Member {
	if o.order != nil {
		return &o.members[o.order[i]]
	}
	return &o.members[i]
}

// inOrderMembers returns a fresh slice of o's members in insertion order, with room
// for extra more.
func (o Object) inOrderMembers(extra int) []Member {
	out := make([]Member, len(o.members), len(o.members)+extra)
	for i := range o.members {
		out[i] = *o.inOrderAt(i)
	}
	return out
}

// orderedObject builds an ordered Object from members in insertion order; a repeated
// key keeps its first position and its last value. ms is not modified or retained.
func orderedObject(ms []Member) Object {
	n := len(ms)
	if n == 0 {
		return Object{order: emptyOrder}
	}
	// Sort the positions by key; the stable sort keeps source order among equal keys,
	// so a run of equal keys starts with the first occurrence and ends with the last.
	byKey := make([]int32, n)
	for i := range byKey {
		byKey[i] = int32(i)
	}
	slices.SortStableFunc(byKey, func(a, b int32) int { return strings.Compare(ms[a].Key, ms[b].Key) })
	members := make([]Member, 0, n)
	first := make([]int32, 0, n) // source position of each sorted member's first occurrence
	for i := 0; i < n; {
		j := i
		for j+1 < n && ms[byKey[j+1]].Key == ms[byKey[i]].Key {
			j++
		}
		members = append(members, Member{Key: ms[byKey[i]].Key, Value: ms[byKey[j]].Value})
		first = append(first, byKey[i])
		i = j + 1
	}
	order := make([]int32, len(members))
	for k := range order {
		order[k] = int32(k)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(first[a], first[b]) })
	return Object{members: slices.Clip(members), order: order}
}

// withOrdered is With for an ordered object: like d[key] = v, an existing key keeps
// its position and a new key goes last.
func (o Object) withOrdered(key string, v Value) Object {
	if i, ok := o.index(key); ok {
		members := slices.Clone(o.members)
		members[i].Value = v
		// The order is unchanged and, like everything in an Object, never modified, so
		// the two objects can share it.
		return Object{members: members, order: o.order}
	}
	return orderedObject(append(o.inOrderMembers(1), Member{Key: key, Value: v}))
}

// mergeOrdered is Merge when either side is ordered: Python's dict.update, where o's
// keys keep their positions and set's new keys follow in set's order.
func (o Object) mergeOrdered(set Object) Object {
	return orderedObject(append(o.inOrderMembers(len(set.members)), set.inOrderMembers(0)...))
}

// withoutOrdered is Without for an ordered object; the remaining keys keep their order.
func (o Object) withoutOrdered(keys []string) Object {
	kept := o.inOrderMembers(0)
	kept = slices.DeleteFunc(kept, func(m Member) bool { return slices.Contains(keys, m.Key) })
	return orderedObject(kept)
}
