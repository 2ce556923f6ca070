package pack

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Diagnostic is one thing the conversion could not carry over, or carried
// over with a caveat, named by file and key path.
type Diagnostic struct {
	File string // the file, relative to the root's parent (the pack's, or for a project task the project's)
	Path string // the key path inside it ("state_checks.files")
	Msg  string
}

// DropsGrading says the diagnostic reports a grading.yaml key the import
// leaves out: the imported task would be graded on less than its author wrote.
func (d Diagnostic) DropsGrading() bool {
	return path.Base(d.File) == "grading.yaml" && strings.HasPrefix(d.Msg, "not mapped")
}

func (d Diagnostic) String() string {
	if d.Path == "" {
		return d.File + ": " + d.Msg
	}
	return d.File + ": " + d.Path + ": " + d.Msg
}

// report collects diagnostics.
type report struct{ diags []Diagnostic }

func (r *report) add(file, path, format string, args ...any) {
	r.diags = append(r.diags, Diagnostic{File: file, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// convError is a conversion failure at a key path.
func convError(file, path, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %s", file, orRoot(path), fmt.Sprintf(format, args...))
}

// mapping reads a YAML mapping and remembers which keys the conversion
// took, so the rest can be reported as not mapped.
type mapping struct {
	file, path string
	keys       []string
	vals       map[string]*yaml.Node
	used       map[string]bool
}

// asMapping reads n as a mapping; null reads as an empty one.
func asMapping(file, path string, n *yaml.Node) (*mapping, error) {
	m := &mapping{file: file, path: path, vals: map[string]*yaml.Node{}, used: map[string]bool{}}
	n = resolve(n)
	if isNull(n) {
		return m, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, convError(file, path, "expected a mapping, got %s", kindOf(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.Kind != yaml.ScalarNode {
			return nil, convError(file, path, "a mapping key must be a scalar")
		}
		if _, dup := m.vals[k.Value]; dup {
			return nil, convError(file, joinPath(path, k.Value), "duplicate key")
		}
		m.keys = append(m.keys, k.Value)
		m.vals[k.Value] = resolve(n.Content[i+1])
	}
	return m, nil
}

func (m *mapping) at(key string) string { return joinPath(m.path, key) }

// take returns a key's value (nil when absent or null) and marks it mapped.
func (m *mapping) take(key string) *yaml.Node {
	m.used[key] = true
	v := m.vals[key]
	if isNull(v) {
		return nil
	}
	return v
}

// has reports a key present with a non-null value, without taking it.
func (m *mapping) has(key string) bool { return !isNull(m.vals[key]) }

// str takes a string (a scalar of any kind reads as its text: YAML authors
// write ids as numbers); absent reads as "".
func (m *mapping) str(key string) (string, error) {
	v := m.take(key)
	if v == nil {
		return "", nil
	}
	if v.Kind != yaml.ScalarNode {
		return "", convError(m.file, m.at(key), "expected a string, got %s", kindOf(v))
	}
	return v.Value, nil
}

func (m *mapping) boolean(key string) (*bool, error) {
	v := m.take(key)
	if v == nil {
		return nil, nil
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
		return nil, convError(m.file, m.at(key), "expected true or false, got %s", describe(v))
	}
	b, _ := strconv.ParseBool(v.Value)
	return &b, nil
}

func (m *mapping) number(key string) (*float64, error) {
	v := m.take(key)
	if v == nil {
		return nil, nil
	}
	if v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!int" && v.ShortTag() != "!!float") {
		return nil, convError(m.file, m.at(key), "expected a number, got %s", describe(v))
	}
	f, err := strconv.ParseFloat(v.Value, 64)
	if err != nil {
		return nil, convError(m.file, m.at(key), "%q is not a number", v.Value)
	}
	return &f, nil
}

func (m *mapping) integer(key string) (*int, error) {
	v := m.take(key)
	if v == nil {
		return nil, nil
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
		return nil, convError(m.file, m.at(key), "expected an integer, got %s", describe(v))
	}
	i, err := strconv.Atoi(v.Value)
	if err != nil {
		return nil, convError(m.file, m.at(key), "%q is not an integer", v.Value)
	}
	return &i, nil
}

func (m *mapping) strings(key string) ([]string, error) {
	v := m.take(key)
	if v == nil {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, convError(m.file, m.at(key), "expected a list of strings, got %s", kindOf(v))
	}
	out := make([]string, 0, len(v.Content))
	for i, c := range v.Content {
		c = resolve(c)
		if c.Kind != yaml.ScalarNode || isNull(c) {
			return nil, convError(m.file, fmt.Sprintf("%s[%d]", m.at(key), i), "expected a string, got %s", kindOf(c))
		}
		out = append(out, c.Value)
	}
	return out, nil
}

// list takes a sequence's items (nil when absent).
func (m *mapping) list(key string) ([]*yaml.Node, error) {
	v := m.take(key)
	if v == nil {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, convError(m.file, m.at(key), "expected a list, got %s", kindOf(v))
	}
	out := make([]*yaml.Node, len(v.Content))
	for i, c := range v.Content {
		out[i] = resolve(c)
	}
	return out, nil
}

// object takes a value as a JSON object, keeping number literals.
func (m *mapping) object(key string) (json.RawMessage, error) {
	v := m.take(key)
	if v == nil {
		return nil, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, convError(m.file, m.at(key), "expected a mapping, got %s", kindOf(v))
	}
	raw, err := nodeJSON(v)
	if err != nil {
		return nil, convError(m.file, m.at(key), "%v", err)
	}
	return raw, nil
}

// raw takes any value as JSON, keeping number literals.
func (m *mapping) raw(key string) (json.RawMessage, error) {
	v := m.take(key)
	if v == nil {
		return nil, nil
	}
	raw, err := nodeJSON(v)
	if err != nil {
		return nil, convError(m.file, m.at(key), "%v", err)
	}
	return raw, nil
}

// sub takes a nested mapping.
func (m *mapping) sub(key string) (*mapping, error) {
	return asMapping(m.file, m.at(key), m.take(key))
}

// leftovers reports every key not taken whose value carries something.
func (m *mapping) leftovers(r *report, why string) {
	var left []string
	for _, k := range m.keys {
		if !m.used[k] && !isEmpty(m.vals[k]) {
			left = append(left, k)
		}
	}
	sort.Strings(left)
	for _, k := range left {
		r.add(m.file, m.at(k), "not mapped (%s): %s", why, describe(m.vals[k]))
	}
}

func kindOf(n *yaml.Node) string {
	n = resolve(n)
	switch {
	case n == nil || isNull(n):
		return "null"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	default:
		return "a scalar " + n.ShortTag()
	}
}

// describe is a short rendering of a value for a diagnostic.
func describe(n *yaml.Node) string {
	n = resolve(n)
	if n == nil {
		return "null"
	}
	raw, err := nodeJSON(n)
	if err != nil {
		return kindOf(n)
	}
	s := string(raw)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
