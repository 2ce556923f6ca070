package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// ArgumentError is a call's arguments failing their tool's schema (or the
// tool's own decoding). Path names the failing value from the arguments root
// ("arguments.items[0].quantity").
type ArgumentError struct {
	Path string
	Msg  string
}

func (e *ArgumentError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// rootPath names the arguments object itself in error paths.
const rootPath = "arguments"

// Validator checks call arguments against one tool's JSON Schema. It is built
// once at registration; Validate is safe for concurrent use.
type Validator struct {
	root *node
	// exact is false when the schema uses references; failures then fall back
	// to the library's schema-pointer message, since a referenced subschema
	// cannot be resolved on its own to pin the instance path.
	exact bool
}

// node is one subschema reachable through properties / items, resolved on its
// own so a failure can be narrowed to the deepest failing instance value.
type node struct {
	resolved   *jsonschema.Resolved
	properties map[string]*node
	additional *node
	// closed is additionalProperties: false. An extra key then fails at the
	// object, whose message names it ("unexpected additional properties"),
	// rather than at the key against a schema that matches nothing.
	closed bool
	prefix []*node
	items  *node
}

// NewValidator resolves schema (a JSON object; empty means "any object").
func NewValidator(schema json.RawMessage) (*Validator, error) {
	schema = bytes.TrimSpace(schema)
	if len(schema) == 0 || bytes.Equal(schema, []byte("null")) {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("parse JSON Schema: %w", err)
	}
	exact := !usesReferences(schema)
	root, err := buildNode(&s, exact)
	if err != nil {
		return nil, fmt.Errorf("resolve JSON Schema: %w", err)
	}
	return &Validator{root: root, exact: exact}, nil
}

// usesReferences reports whether the schema contains $ref, $dynamicRef or
// $recursiveRef anywhere (a key scan over the raw document is enough).
var refKey = regexp.MustCompile(`"\$(ref|dynamicRef|recursiveRef)"\s*:`)

func usesReferences(raw []byte) bool { return refKey.Match(raw) }

func buildNode(s *jsonschema.Schema, deep bool) (*node, error) {
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	n := &node{resolved: r}
	if !deep {
		return n, nil
	}
	if len(s.Properties) > 0 {
		n.properties = make(map[string]*node, len(s.Properties))
		for name, sub := range s.Properties {
			if sub == nil {
				continue
			}
			if n.properties[name], err = buildNode(sub, true); err != nil {
				return nil, fmt.Errorf("properties.%s: %w", name, err)
			}
		}
	}
	if isFalseSchema(s.AdditionalProperties) {
		n.closed = true
	} else if s.AdditionalProperties != nil {
		if n.additional, err = buildNode(s.AdditionalProperties, true); err != nil {
			return nil, fmt.Errorf("additionalProperties: %w", err)
		}
	}
	for i, sub := range s.PrefixItems {
		c, err := buildNode(sub, true)
		if err != nil {
			return nil, fmt.Errorf("prefixItems[%d]: %w", i, err)
		}
		n.prefix = append(n.prefix, c)
	}
	if s.Items != nil {
		if n.items, err = buildNode(s.Items, true); err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
	}
	return n, nil
}

// Validate checks raw call arguments: empty means {}; anything that is not a
// JSON object, or fails the schema, is an *ArgumentError naming the path. On
// success it returns the arguments compacted.
func (v *Validator) Validate(raw []byte) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	var inst any
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&inst); err != nil {
		return nil, &ArgumentError{Path: rootPath, Msg: "not valid JSON: " + err.Error()}
	}
	if dec.More() {
		return nil, &ArgumentError{Path: rootPath, Msg: "not valid JSON: data after the top-level value"}
	}
	if _, ok := inst.(map[string]any); !ok {
		return nil, &ArgumentError{Path: rootPath, Msg: "want a JSON object, got " + kindOf(inst)}
	}
	if err := v.check(inst); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, &ArgumentError{Path: rootPath, Msg: "not valid JSON: " + err.Error()}
	}
	return buf.Bytes(), nil
}

func (v *Validator) check(inst any) (err error) {
	// The library asserts on internal invariants with panics; a schema or value
	// that trips one must fail this call, not the runner.
	defer func() {
		if p := recover(); p != nil {
			err = &ArgumentError{Path: rootPath, Msg: fmt.Sprintf("schema validation failed: %v", p)}
		}
	}()
	verr := v.root.resolved.Validate(inst)
	if verr == nil {
		return nil
	}
	if !v.exact {
		return &ArgumentError{Path: rootPath, Msg: verr.Error()}
	}
	path, leaf := v.root.locate(inst, rootPath, verr)
	return &ArgumentError{Path: path, Msg: leaf}
}

// locate descends to the deepest child value that fails its own subschema and
// reports that value's path and the library's message for it, stripped of the
// schema-pointer prefixes.
func (n *node) locate(inst any, path string, err error) (string, string) {
	switch val := inst.(type) {
	case map[string]any:
		keys := make([]string, 0, len(val))
		for k := range val {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			child, declared := n.properties[k]
			if !declared {
				if n.closed {
					continue
				}
				child = n.additional
			}
			if child == nil {
				continue
			}
			if cerr := child.resolved.Validate(val[k]); cerr != nil {
				return child.locate(val[k], joinKey(path, k), cerr)
			}
		}
	case []any:
		for i, e := range val {
			child := n.items
			if i < len(n.prefix) {
				child = n.prefix[i]
			}
			if child == nil {
				continue
			}
			if cerr := child.resolved.Validate(e); cerr != nil {
				return child.locate(e, path+"["+strconv.Itoa(i)+"]", cerr)
			}
		}
	}
	return path, leafMessage(err)
}

// isFalseSchema matches the boolean schema false, which jsonschema-go holds as
// {"not": {}}.
func isFalseSchema(s *jsonschema.Schema) bool {
	if s == nil || s.Not == nil {
		return false
	}
	empty, err1 := json.Marshal(s.Not)
	whole, err2 := json.Marshal(&jsonschema.Schema{Not: s.Not})
	self, err3 := json.Marshal(s)
	return err1 == nil && err2 == nil && err3 == nil && string(empty) == "true" && string(self) == string(whole)
}

// leafMessage drops the library's "validating <schema>: " prefixes.
func leafMessage(err error) string {
	s := err.Error()
	for strings.HasPrefix(s, "validating ") {
		i := strings.Index(s, ": ")
		if i < 0 {
			break
		}
		s = s[i+2:]
	}
	return s
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func joinKey(path, key string) string {
	if identifier.MatchString(key) {
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
