package task

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// DecodeError is a decoding or validation failure at one JSON path. Path joins
// object keys with "." and list indexes as "[i]" (task.agent_tools[1].source);
// it is empty for a failure of the document as a whole.
type DecodeError struct {
	Path string
	Msg  string
}

func (e *DecodeError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func joinIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// legacyNullKeys is implemented by structs that still accept keys an older
// schema dumped as null. The map's value is the refusal for a non-null value.
type legacyNullKeys interface {
	legacyNullKeys() map[string]string
}

// DecodeStrict decodes one JSON value into v (a non-nil pointer) and refuses,
// with a *DecodeError naming the JSON path:
//   - malformed JSON and any data after the top-level value;
//   - an object key no struct field declares (json tags are matched exactly,
//     unlike encoding/json's case-insensitive fallback), at any depth: inside
//     slices, maps, pointers and nested structs;
//   - a duplicate key in an object decoded into a struct or typed map;
//   - a JSON type that does not fit the Go type, including a non-integer or
//     out-of-range number for an integer field;
//   - a value outside a closed set (the enum types of this package).
//
// json.RawMessage (alone or as a map value) is free-form and only compacted, so
// number literals keep their spelling. An explicit null for a struct field means
// "absent" (Python's Optional): the field keeps its zero value. A null list
// element or map value is accepted only where Go can hold it (pointer, slice,
// map, interface, RawMessage). On success *v is replaced (not merged into); on
// error it is left untouched.
func DecodeStrict(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("task.DecodeStrict: need a non-nil pointer, got %T", v)
	}
	if !json.Valid(data) {
		var scratch any
		err := json.Unmarshal(data, &scratch)
		if err == nil { // unreachable: Valid and Unmarshal share one scanner
			err = errors.New("syntax error")
		}
		return &DecodeError{Msg: "invalid JSON: " + err.Error()}
	}
	// Decode into a fresh value and assign only on success: a refused document
	// leaves v exactly as it was (and v is replaced, never merged into).
	fresh := reflect.New(rv.Elem().Type())
	d := &decoder{}
	if err := d.value(bytes.TrimSpace(data), fresh.Elem(), "", false); err != nil {
		return err
	}
	rv.Elem().Set(fresh.Elem())
	return nil
}

// maxDecodeDepth bounds the nesting of typed values (RawMessage content is not
// counted). Every level re-scans its subtree, and TraceConstraint.require is
// recursive, so without a bound a deeply nested payload costs quadratic time.
const maxDecodeDepth = 64

type decoder struct {
	depth int
}

var (
	rawMessageType       = reflect.TypeFor[json.RawMessage]()
	jsonUnmarshalerType  = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType  = reflect.TypeFor[encoding.TextUnmarshaler]()
	terminationEnumType  = reflect.TypeFor[TerminationReason]()
	closedSetType        = reflect.TypeFor[closedSet]()
	legacyNullKeysIfType = reflect.TypeFor[legacyNullKeys]()
)

// jsonKind names the JSON type of a syntactically valid, trimmed value.
func jsonKind(raw []byte) string {
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

func nullable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	}
	return false
}

func mismatch(path, want string, raw []byte) error {
	return &DecodeError{Path: path, Msg: fmt.Sprintf("expected %s, got %s", want, jsonKind(raw))}
}

// decodeValue decodes raw (valid, trimmed JSON) into rv. isField says rv is a
// struct field, where null means absent.
func (d *decoder) value(raw []byte, rv reflect.Value, path string, isField bool) error {
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxDecodeDepth {
		return &DecodeError{Path: path, Msg: fmt.Sprintf("nested deeper than %d levels", maxDecodeDepth)}
	}
	t := rv.Type()
	if raw[0] == 'n' {
		return null(rv, path, isField, raw)
	}
	if t == rawMessageType {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return &DecodeError{Path: path, Msg: err.Error()}
		}
		rv.SetBytes(buf.Bytes())
		return nil
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		pt := reflect.PointerTo(t)
		if pt.Implements(jsonUnmarshalerType) || pt.Implements(textUnmarshalerType) {
			// A type with its own decoding (time.Time) checks its own content.
			if err := json.Unmarshal(raw, rv.Addr().Interface()); err != nil {
				return &DecodeError{Path: path, Msg: err.Error()}
			}
			return nil
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		elem := reflect.New(t.Elem())
		if err := d.value(raw, elem.Elem(), path, false); err != nil {
			return err
		}
		rv.Set(elem)
		return nil
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return &DecodeError{Path: path, Msg: fmt.Sprintf("cannot decode into interface %s", t)}
		}
		var x any
		if err := json.Unmarshal(raw, &x); err != nil {
			return &DecodeError{Path: path, Msg: err.Error()}
		}
		rv.Set(reflect.ValueOf(&x).Elem())
		return nil
	case reflect.Struct:
		return d.object(raw, rv, path)
	case reflect.Map:
		return d.mapping(raw, rv, path)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if raw[0] != '"' {
				return mismatch(path, "base64 string", raw)
			}
			if err := json.Unmarshal(raw, rv.Addr().Interface()); err != nil {
				return &DecodeError{Path: path, Msg: err.Error()}
			}
			return nil
		}
		return d.list(raw, rv, path)
	case reflect.Array:
		return d.list(raw, rv, path)
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return scalar(raw, rv, path)
	}
	return &DecodeError{Path: path, Msg: fmt.Sprintf("cannot decode into Go type %s", t)}
}

// null decodes a JSON null: an absent field keeps its zero value, a
// nullable type becomes its zero, anything else is a type mismatch.
func null(rv reflect.Value, path string, isField bool, raw []byte) error {
	t := rv.Type()
	switch {
	case isField && t == rawMessageType:
		rv.SetZero()
	case t == rawMessageType:
		rv.SetBytes([]byte("null"))
	case nullable(t):
		rv.SetZero()
	case isField:
		// absent: keep the zero value
	default:
		return mismatch(path, wantName(t), raw)
	}
	return nil
}

// scalar decodes a string, boolean or number into its Go kind: the JSON
// kind must match, a number must fit, and a closed set's string must be one
// of its members.
func scalar(raw []byte, rv reflect.Value, path string) error {
	t := rv.Type()
	switch t.Kind() {
	case reflect.String:
		if raw[0] != '"' {
			return mismatch(path, "string", raw)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return &DecodeError{Path: path, Msg: err.Error()}
		}
		if t.Implements(closedSetType) && !(t == terminationEnumType && s == "") {
			members := reflect.ValueOf(s).Convert(t).Interface().(closedSet).members()
			if !isMember(s, members) {
				return &DecodeError{Path: path, Msg: notMember(s, members)}
			}
		}
		rv.SetString(s)
		return nil
	case reflect.Bool:
		if raw[0] != 't' && raw[0] != 'f' {
			return mismatch(path, "boolean", raw)
		}
		rv.SetBool(raw[0] == 't')
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if jsonKind(raw) != "number" {
			return mismatch(path, "integer", raw)
		}
		n, err := strconv.ParseInt(string(raw), 10, t.Bits())
		if err != nil {
			return numberError(path, raw, t, err)
		}
		rv.SetInt(n)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if jsonKind(raw) != "number" {
			return mismatch(path, "non-negative integer", raw)
		}
		n, err := strconv.ParseUint(string(raw), 10, t.Bits())
		if err != nil {
			return numberError(path, raw, t, err)
		}
		rv.SetUint(n)
		return nil
	case reflect.Float32, reflect.Float64:
		if jsonKind(raw) != "number" {
			return mismatch(path, "number", raw)
		}
		f, err := strconv.ParseFloat(string(raw), t.Bits())
		if err != nil {
			return numberError(path, raw, t, err)
		}
		rv.SetFloat(f)
		return nil
	}
	return &DecodeError{Path: path, Msg: fmt.Sprintf("cannot decode into Go type %s", t)}
}

func numberError(path string, raw []byte, t reflect.Type, err error) error {
	if errors.Is(err, strconv.ErrRange) {
		return &DecodeError{Path: path, Msg: fmt.Sprintf("%s is out of range for %s", raw, t.Kind())}
	}
	return &DecodeError{Path: path, Msg: fmt.Sprintf("expected %s, got %s", wantName(t), raw)}
}

// wantName is the JSON type a Go type decodes from, as error messages say it.
func wantName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	}
	return t.String()
}

type member struct {
	key string
	raw []byte
}

// objectMembers splits a JSON object into its members in document order, so the
// first offending key reported is the first one written.
func objectMembers(raw []byte, path string) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, &DecodeError{Path: path, Msg: err.Error()}
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, &DecodeError{Path: path, Msg: err.Error()}
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, &DecodeError{Path: joinKey(path, key), Msg: err.Error()}
		}
		out = append(out, member{key: key, raw: bytes.TrimSpace(v)})
	}
	return out, nil
}

func (d *decoder) list(raw []byte, rv reflect.Value, path string) error {
	if raw[0] != '[' {
		return mismatch(path, "array", raw)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return &DecodeError{Path: path, Msg: err.Error()}
	}
	t := rv.Type()
	if t.Kind() == reflect.Array {
		if len(items) != t.Len() {
			return &DecodeError{Path: path, Msg: fmt.Sprintf("expected %d elements, got %d", t.Len(), len(items))}
		}
	} else {
		rv.Set(reflect.MakeSlice(t, len(items), len(items)))
	}
	for i, item := range items {
		if err := d.value(bytes.TrimSpace(item), rv.Index(i), joinIndex(path, i), false); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) mapping(raw []byte, rv reflect.Value, path string) error {
	if raw[0] != '{' {
		return mismatch(path, "object", raw)
	}
	t := rv.Type()
	members, err := objectMembers(raw, path)
	if err != nil {
		return err
	}
	m := reflect.MakeMapWithSize(t, len(members))
	seen := make(map[string]bool, len(members))
	for _, mem := range members {
		p := joinKey(path, mem.key)
		if seen[mem.key] {
			return &DecodeError{Path: p, Msg: "duplicate key"}
		}
		seen[mem.key] = true
		key, err := mapKey(t.Key(), mem.key)
		if err != nil {
			return &DecodeError{Path: p, Msg: err.Error()}
		}
		elem := reflect.New(t.Elem()).Elem()
		if err := d.value(mem.raw, elem, p, false); err != nil {
			return err
		}
		m.SetMapIndex(key, elem)
	}
	rv.Set(m)
	return nil
}

func mapKey(t reflect.Type, s string) (reflect.Value, error) {
	switch t.Kind() {
	case reflect.String:
		k := reflect.ValueOf(s).Convert(t)
		if t.Implements(closedSetType) && !isMember(s, k.Interface().(closedSet).members()) {
			return reflect.Value{}, errors.New(notMember(s, k.Interface().(closedSet).members()))
		}
		return k, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, t.Bits())
		if err != nil {
			return reflect.Value{}, fmt.Errorf("key is not a %s", t.Kind())
		}
		return reflect.ValueOf(n).Convert(t), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := strconv.ParseUint(s, 10, t.Bits())
		if err != nil {
			return reflect.Value{}, fmt.Errorf("key is not a %s", t.Kind())
		}
		return reflect.ValueOf(n).Convert(t), nil
	}
	return reflect.Value{}, fmt.Errorf("cannot decode object keys into Go type %s", t)
}

func (d *decoder) object(raw []byte, rv reflect.Value, path string) error {
	if raw[0] != '{' {
		return mismatch(path, "object", raw)
	}
	t := rv.Type()
	fields := structFields(t)
	var legacy map[string]string
	if t.Implements(legacyNullKeysIfType) {
		legacy = rv.Interface().(legacyNullKeys).legacyNullKeys()
	}
	members, err := objectMembers(raw, path)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(members))
	for _, mem := range members {
		p := joinKey(path, mem.key)
		if seen[mem.key] {
			return &DecodeError{Path: p, Msg: "duplicate key"}
		}
		seen[mem.key] = true
		index, ok := fields[mem.key]
		if !ok {
			if refusal, isLegacy := legacy[mem.key]; isLegacy {
				if mem.raw[0] == 'n' {
					continue
				}
				return &DecodeError{Path: p, Msg: refusal}
			}
			return &DecodeError{Path: p, Msg: "unknown key"}
		}
		if err := d.value(mem.raw, fieldByIndexAlloc(rv, index), p, true); err != nil {
			return err
		}
	}
	return nil
}

// fieldByIndexAlloc is reflect.Value.FieldByIndex that allocates nil embedded
// struct pointers on the way instead of panicking.
func fieldByIndexAlloc(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

var fieldCache sync.Map // reflect.Type -> map[string][]int

// structFields maps each JSON name of t to its field index, following
// encoding/json's tag rules: "-" skips, an untagged embedded struct is
// flattened, and a shallower name wins over a promoted one.
func structFields(t reflect.Type) map[string][]int {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string][]int)
	}
	out := map[string][]int{}
	depth := map[string]int{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			index := append(append([]int(nil), prefix...), i)
			if name == "" && f.Anonymous {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, index)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if d, ok := depth[name]; ok && d <= len(index) {
				continue
			}
			out[name] = index
			depth[name] = len(index)
		}
	}
	walk(t, nil)
	fieldCache.Store(t, out)
	return out
}
