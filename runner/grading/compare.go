package grading

import (
	"bytes"
	"math"
	"math/big"
	"strings"

	"tolokaforge.io/operator/api/canonical"
)

// Value comparison for JSONPath checks and DB probes. Numbers compare by exact value
// across int and float (158.99 == 158.99, 41 == 41.0), as canonical.Equal does.

// numericValue returns v as an exact rational when it is a finite number.
func numericValue(v canonical.Value) (*big.Rat, bool) {
	switch x := v.(type) {
	case canonical.Int:
		return new(big.Rat).SetInt(x.Big()), true
	case canonical.Float:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		return new(big.Rat).SetFloat64(f), true
	}
	return nil, false
}

// order compares a and b when both are numbers or both are strings.
func order(a, b canonical.Value) (int, bool) {
	if x, ok := numericValue(a); ok {
		if y, ok := numericValue(b); ok {
			return x.Cmp(y), true
		}
		return 0, false
	}
	if x, ok := a.(canonical.String); ok {
		if y, ok := b.(canonical.String); ok {
			return strings.Compare(string(x), string(y)), true
		}
	}
	return 0, false
}

// contains reports whether hay contains needle: a substring of a string, an element of
// an array, or a key of an object. fold makes string comparisons case-insensitive.
func contains(hay, needle canonical.Value, fold bool) bool {
	switch h := hay.(type) {
	case canonical.String:
		n, ok := needle.(canonical.String)
		if !ok {
			return false
		}
		if fold {
			return strings.Contains(strings.ToLower(string(h)), strings.ToLower(string(n)))
		}
		return strings.Contains(string(h), string(n))
	case canonical.Array:
		for _, e := range h {
			if fold {
				es, eok := e.(canonical.String)
				ns, nok := needle.(canonical.String)
				if eok && nok && strings.EqualFold(string(es), string(ns)) {
					return true
				}
				continue
			}
			if canonical.Equal(e, needle) {
				return true
			}
		}
	case canonical.Object:
		n, ok := needle.(canonical.String)
		if !ok {
			return false
		}
		for _, k := range h.Keys() {
			if k == string(n) || (fold && strings.EqualFold(k, string(n))) {
				return true
			}
		}
	}
	return false
}

// asNumber turns a numeric string into its number, for numeric_string_fields.
func asNumber(v canonical.Value) canonical.Value {
	s, ok := v.(canonical.String)
	if !ok {
		return v
	}
	n, err := canonical.Parse([]byte(strings.TrimSpace(string(s))))
	if err != nil {
		return v
	}
	if k := n.Kind(); k == canonical.KindInt || k == canonical.KindFloat {
		return n
	}
	return v
}

// show renders a value for a reason message, bounded so one huge node cannot flood
// Grade.reasons.
func show(v canonical.Value) string {
	b := canonical.Marshal(orNull(v))
	const limit = 120
	if len(b) > limit {
		return string(bytes.ToValidUTF8(b[:limit], nil)) + "…"
	}
	return string(b)
}
