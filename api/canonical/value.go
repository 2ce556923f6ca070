package canonical

import (
	"iter"
	"math/big"
	"slices"
	"strings"
)

// Kind names the JSON type of a Value.
type Kind uint8

// The JSON kinds. Int and Float are separate kinds because Python keeps them apart.
const (
	KindNull Kind = iota
	kindBool
	KindInt
	KindFloat
	kindString
	KindArray
	KindObject
)

var kindNames = [...]string{"null", "bool", "int", "float", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Value is one JSON value: Null, Bool, Int, Float, String, Array or Object.
// A nil Value is treated as Null everywhere.
type Value interface {
	Kind() Kind
	isValue()
}

// Null is JSON null.
type Null struct{}

// Bool is JSON true or false.
type Bool bool

// String is a JSON string. It normally holds UTF-8; a lone surrogate decoded from a
// \uD800-style escape is held as its 3-byte WTF-8 form so it can be written back.
type String string

// Float is a JSON number written with a fraction or an exponent (Python float).
type Float float64

// Int is a JSON number written without a fraction or exponent (Python int), of any size.
type Int struct {
	small int64
	big   *big.Int // non-nil only when the value does not fit in int64
}

// Array is a JSON array.
type Array []Value

// Member is one key/value pair of an Object.
type Member struct {
	Key   string
	Value Value
}

// Object is a JSON object. Its members are kept sorted by key in code-point order
// (byte order of UTF-8) with unique keys, which is the order the canonical form needs.
// An Object may also remember the order its keys were inserted in, as a Python dict
// does (see NewOrderedObject); only Dump without SortKeys looks at that order.
type Object struct {
	members []Member
	// order, when non-nil, holds indexes into members in insertion order. nil means
	// the object has no insertion order of its own: key order stands in for it.
	order []int32
}

func (Null) Kind() Kind   { return KindNull }
func (Bool) Kind() Kind   { return kindBool }
func (String) Kind() Kind { return kindString }
func (Float) Kind() Kind  { return KindFloat }
func (Int) Kind() Kind    { return KindInt }
func (Array) Kind() Kind  { return KindArray }
func (Object) Kind() Kind { return KindObject }

func (Null) isValue()   {}
func (Bool) isValue()   {}
func (String) isValue() {}
func (Float) isValue()  {}
func (Int) isValue()    {}
func (Array) isValue()  {}
func (Object) isValue() {}

// KindOf returns v's kind, treating a nil Value as null.
func KindOf(v Value) Kind {
	if v == nil {
		return KindNull
	}
	return v.Kind()
}

// NewInt returns the Int n.
func NewInt(n int64) Int { return Int{small: n} }

// NewBigInt returns the Int n; n is copied.
func NewBigInt(n *big.Int) Int {
	if n.IsInt64() {
		return Int{small: n.Int64()}
	}
	return Int{big: new(big.Int).Set(n)}
}

// Int64 returns i as an int64 and whether it fits.
func (i Int) Int64() (int64, bool) {
	if i.big != nil {
		return 0, false
	}
	return i.small, true
}

// Big returns i as a new big.Int.
func (i Int) Big() *big.Int {
	if i.big != nil {
		return new(big.Int).Set(i.big)
	}
	return big.NewInt(i.small)
}

// String returns i in decimal.
func (i Int) String() string { return string(appendInt(nil, i)) }

// NewObject builds an Object from members in any order. When a key repeats, the last
// member wins, as in Python's json.loads.
func NewObject(members ...Member) Object {
	if len(members) == 0 {
		return Object{}
	}
	ms := slices.Clone(members)
	return Object{members: sortMembers(ms)}
}

// sortMembers sorts ms in place by key and drops all but the last of equal keys.
func sortMembers(ms []Member) []Member {
	if len(ms) < 2 {
		return ms
	}
	sorted := true
	for i := 1; i < len(ms); i++ {
		if ms[i-1].Key >= ms[i].Key {
			sorted = false
			break
		}
	}
	if sorted {
		return ms
	}
	// Stable sort keeps source order among equal keys, so the last one is the later
	// duplicate.
	slices.SortStableFunc(ms, func(a, b Member) int { return strings.Compare(a.Key, b.Key) })
	out := ms[:0]
	for i := range ms {
		if i+1 < len(ms) && ms[i+1].Key == ms[i].Key {
			continue
		}
		out = append(out, ms[i])
	}
	return out
}

// Len returns the number of members.
func (o Object) Len() int { return len(o.members) }

// At returns the i-th member in key order.
func (o Object) At(i int) Member { return o.members[i] }

// Get returns the value stored under key.
func (o Object) Get(key string) (Value, bool) {
	i, ok := o.index(key)
	if !ok {
		return nil, false
	}
	return o.members[i].Value, true
}

// Has reports whether key is present.
func (o Object) Has(key string) bool {
	_, ok := o.index(key)
	return ok
}

func (o Object) index(key string) (int, bool) {
	ms := o.members
	// Records are small; a linear scan beats binary search below a handful of keys.
	if len(ms) <= 8 {
		for i := range ms {
			if ms[i].Key == key {
				return i, true
			}
		}
		return 0, false
	}
	return slices.BinarySearchFunc(ms, key, func(m Member, k string) int { return strings.Compare(m.Key, k) })
}

// All iterates over the members in key order.
func (o Object) All() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) {
		for _, m := range o.members {
			if !yield(m.Key, m.Value) {
				return
			}
		}
	}
}

// Keys returns the keys in code-point order.
func (o Object) Keys() []string {
	keys := make([]string, len(o.members))
	for i, m := range o.members {
		keys[i] = m.Key
	}
	return keys
}

// Merge returns a new Object holding o's members overridden by set's members: Python's
// dict.update, shallow.
func (o Object) Merge(set Object) Object {
	if len(set.members) == 0 {
		return o
	}
	if o.order != nil || set.order != nil {
		return o.mergeOrdered(set)
	}
	out := make([]Member, 0, len(o.members)+len(set.members))
	a, b := o.members, set.members
	for len(a) > 0 && len(b) > 0 {
		switch c := strings.Compare(a[0].Key, b[0].Key); {
		case c < 0:
			out = append(out, a[0])
			a = a[1:]
		case c > 0:
			out = append(out, b[0])
			b = b[1:]
		default:
			out = append(out, b[0])
			a, b = a[1:], b[1:]
		}
	}
	out = append(out, a...)
	out = append(out, b...)
	return Object{members: out}
}

// Without returns o without the given keys; o itself when none is present.
func (o Object) Without(keys ...string) Object {
	drop := 0
	for _, k := range keys {
		if o.Has(k) {
			drop++
		}
	}
	if drop == 0 {
		return o
	}
	if o.order != nil {
		return o.withoutOrdered(keys)
	}
	out := make([]Member, 0, len(o.members)-drop)
	for _, m := range o.members {
		if !slices.Contains(keys, m.Key) {
			out = append(out, m)
		}
	}
	return Object{members: out}
}

// With returns o with key set to v.
func (o Object) With(key string, v Value) Object {
	if o.order != nil {
		return o.withOrdered(key, v)
	}
	return o.Merge(Object{members: []Member{{Key: key, Value: v}}})
}
