package canonical

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
)

// FromAny converts a Go value made of nil, bool, string, json.Number, json.RawMessage,
// the integer and float types, *big.Int, []any, map[string]any and Value into a Value.
// Go floats become Float, Go integers become Int, and a json.Number keeps its literal's
// int/float identity. NaN and Inf are refused, as Parse refuses them.
func FromAny(x any) (Value, error) {
	return fromAny(x, "$")
}

func fromAny(x any, path string) (Value, error) {
	switch v := x.(type) {
	case nil:
		return Null{}, nil
	case Value:
		return v, nil
	case bool:
		return Bool(v), nil
	case string:
		return String(v), nil
	case json.Number:
		val, err := Parse([]byte(v))
		if err != nil || !isNumber(val.Kind()) {
			return nil, fmt.Errorf("%s: invalid json.Number %q", path, string(v))
		}
		return val, nil
	case json.RawMessage:
		val, err := Parse(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return val, nil
	case float64:
		return floatValue(v, path)
	case float32:
		return floatValue(float64(v), path)
	case int:
		return NewInt(int64(v)), nil
	case int8:
		return NewInt(int64(v)), nil
	case int16:
		return NewInt(int64(v)), nil
	case int32:
		return NewInt(int64(v)), nil
	case int64:
		return NewInt(v), nil
	case uint:
		return NewBigInt(new(big.Int).SetUint64(uint64(v))), nil
	case uint8:
		return NewInt(int64(v)), nil
	case uint16:
		return NewInt(int64(v)), nil
	case uint32:
		return NewInt(int64(v)), nil
	case uint64:
		return NewBigInt(new(big.Int).SetUint64(v)), nil
	case *big.Int:
		if v == nil {
			return Null{}, nil
		}
		return NewBigInt(v), nil
	case []any:
		arr := make(Array, len(v))
		for i, e := range v {
			ev, err := fromAny(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			arr[i] = ev
		}
		return arr, nil
	case map[string]any:
		ms := make([]Member, 0, len(v))
		for k, e := range v {
			ev, err := fromAny(e, fmt.Sprintf("%s[%q]", path, k))
			if err != nil {
				return nil, err
			}
			ms = append(ms, Member{Key: k, Value: ev})
		}
		return Object{members: sortMembers(ms)}, nil
	}
	return nil, fmt.Errorf("%s: unsupported Go type %s", path, reflect.TypeOf(x))
}

func floatValue(f float64, path string) (Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%s: NaN and Infinity are not allowed", path)
	}
	return Float(f), nil
}

// ToAny converts v into plain Go values: nil, bool, string, json.Number (holding the
// canonical literal, so a Float keeps its ".0"), []any and map[string]any. This is the
// shape JSONPath and CEL libraries consume.
func ToAny(v Value) any {
	switch x := v.(type) {
	case nil, Null:
		return nil
	case Bool:
		return bool(x)
	case String:
		return string(x)
	case Int:
		return json.Number(appendInt(nil, x))
	case Float:
		return json.Number(appendFloat(nil, float64(x)))
	case Array:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ToAny(e)
		}
		return out
	case Object:
		out := make(map[string]any, len(x.members))
		for _, m := range x.members {
			out[m.Key] = ToAny(m.Value)
		}
		return out
	}
	return nil
}

// MarshalJSON makes Values usable inside encoding/json structures. encoding/json
// re-escapes <, > and & in what it embeds, so the bytes it writes are equal JSON but not
// canonical; use Marshal for canonical bytes.
func (v Null) MarshalJSON() ([]byte, error) { return Marshal(v), nil }

// MarshalJSON implements json.Marshaler; see Null.MarshalJSON.
func (v Bool) MarshalJSON() ([]byte, error) { return Marshal(v), nil }

// MarshalJSON implements json.Marshaler; see Null.MarshalJSON.
func (v String) MarshalJSON() ([]byte, error) { return Marshal(v), nil }

// MarshalJSON implements json.Marshaler; see Null.MarshalJSON.
func (v Int) MarshalJSON() ([]byte, error) { return Marshal(v), nil }

// MarshalJSON implements json.Marshaler; NaN and Inf have no JSON form and fail.
func (v Float) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("canonical: %v has no JSON form", f)
	}
	return Marshal(v), nil
}

// MarshalJSON implements json.Marshaler; see Null.MarshalJSON.
func (v Array) MarshalJSON() ([]byte, error) { return Marshal(v), nil }

// MarshalJSON implements json.Marshaler; see Null.MarshalJSON.
func (v Object) MarshalJSON() ([]byte, error) { return Marshal(v), nil }
