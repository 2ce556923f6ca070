package canonical

import (
	"math"
	"math/big"
	"strconv"
)

// Equal reports whether a and b are equal the way the DB service matches filters:
// Python's == with one deliberate difference, booleans equal only booleans (Python has
// True == 1). Numbers compare by exact mathematical value across Int and Float
// (1 == 1.0, 2**53+1 != 2.0**53); objects compare by key set and values, arrays element
// by element.
func Equal(a, b Value) bool {
	ka, kb := KindOf(a), KindOf(b)
	if isNumber(ka) && isNumber(kb) {
		return numbersEqual(a, b)
	}
	if ka != kb {
		return false
	}
	switch ka {
	case KindNull:
		return true
	case kindBool:
		return a.(Bool) == b.(Bool)
	case kindString:
		return a.(String) == b.(String)
	case KindArray:
		x, y := a.(Array), b.(Array)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case KindObject:
		x, y := a.(Object), b.(Object)
		if len(x.members) != len(y.members) {
			return false
		}
		for i := range x.members {
			if x.members[i].Key != y.members[i].Key || !Equal(x.members[i].Value, y.members[i].Value) {
				return false
			}
		}
		return true
	}
	return false
}

func isNumber(k Kind) bool { return k == KindInt || k == KindFloat }

func numbersEqual(a, b Value) bool {
	switch x := a.(type) {
	case Int:
		switch y := b.(type) {
		case Int:
			return intsEqual(x, y)
		case Float:
			return intEqualsFloat(x, float64(y))
		}
	case Float:
		switch y := b.(type) {
		case Int:
			return intEqualsFloat(y, float64(x))
		case Float:
			return x == y
		}
	}
	return false
}

func intsEqual(x, y Int) bool {
	if x.big == nil && y.big == nil {
		return x.small == y.small
	}
	if x.big != nil && y.big != nil {
		return x.big.Cmp(y.big) == 0
	}
	// Ints are normalised: a big value never fits in int64, so mixed forms differ.
	return false
}

// two63 is 2**63 as a float64; int64 conversion is exact below it.
const two63 = 9223372036854775808.0

func intEqualsFloat(i Int, f float64) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return false
	}
	if f >= -two63 && f < two63 {
		return i.big == nil && int64(f) == i.small
	}
	if i.big == nil {
		return false
	}
	bf, _ := new(big.Float).SetFloat64(f).Int(nil)
	return bf.Cmp(i.big) == 0
}

// EqualityKey returns a string that two scalar values share exactly when Equal holds
// for them, for use as a hash-index key. It returns false for arrays, objects and NaN,
// which callers must compare with Equal.
func EqualityKey(v Value) (string, bool) {
	switch x := v.(type) {
	case nil, Null:
		return "z", true
	case Bool:
		if x {
			return "b1", true
		}
		return "b0", true
	case String:
		return "s" + string(x), true
	case Int:
		return "n" + x.String(), true
	case Float:
		f := float64(x)
		switch {
		case math.IsNaN(f):
			return "", false
		case math.IsInf(f, 0) || f != math.Trunc(f):
			return "f" + string(appendFloat(nil, f)), true
		case f >= -two63 && f < two63:
			return "n" + strconv.FormatInt(int64(f), 10), true
		default:
			bi, _ := new(big.Float).SetFloat64(f).Int(nil)
			return "n" + bi.String(), true
		}
	}
	return "", false
}
