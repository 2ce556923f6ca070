package pack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"tolokaforge.io/operator/api/task"
)

// parseYAML reads one YAML document into its node tree (nil for an empty
// document).
func parseYAML(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	return resolve(doc.Content[0]), nil
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// isEmpty is null, "", [] or {}: a value that carries nothing.
func isEmpty(n *yaml.Node) bool {
	n = resolve(n)
	switch {
	case isNull(n):
		return true
	case n.Kind == yaml.SequenceNode:
		return len(n.Content) == 0
	case n.Kind == yaml.MappingNode:
		// A mapping of empty values ({guidance: [], disallowed: []}) carries
		// nothing either.
		for i := 1; i < len(n.Content); i += 2 {
			if !isEmpty(n.Content[i]) {
				return false
			}
		}
		return true
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		return n.Value == ""
	}
	return false
}

// nodeJSON converts a node to compact JSON keeping key order and number
// literals: an int stays an int and a float a float (YAML 300.00 becomes
// 300.0, never 300).
func nodeJSON(n *yaml.Node) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, resolve(n), ""); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeJSON(b *bytes.Buffer, n *yaml.Node, path string) error {
	if n == nil {
		b.WriteString("null")
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" {
				return fmt.Errorf("%s: a mapping key must be a scalar", orRoot(path))
			}
			if seen[k.Value] {
				return fmt.Errorf("%s: duplicate key %q", orRoot(path), k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k.Value)
			b.WriteByte(':')
			if err := writeJSON(b, resolve(n.Content[i+1]), joinPath(path, k.Value)); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, resolve(c), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		return writeScalar(b, n, path)
	default:
		return fmt.Errorf("%s: unsupported YAML node", orRoot(path))
	}
	return nil
}

func writeScalar(b *bytes.Buffer, n *yaml.Node, path string) error {
	switch n.ShortTag() {
	case "!!null":
		b.WriteString("null")
	case "!!bool":
		v, err := strconv.ParseBool(strings.ToLower(n.Value))
		if err != nil {
			return fmt.Errorf("%s: %q is not a boolean", orRoot(path), n.Value)
		}
		b.WriteString(strconv.FormatBool(v))
	case "!!int":
		if decimalInt.MatchString(n.Value) {
			// Kept as written: JSON and the canonical hash carry big ints.
			b.WriteString(strings.TrimPrefix(n.Value, "+"))
			return nil
		}
		v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
		if err != nil {
			return fmt.Errorf("%s: integer %q does not fit 64 bits", orRoot(path), n.Value)
		}
		b.WriteString(strconv.FormatInt(v, 10))
	case "!!float":
		if decimalInt.MatchString(n.Value) {
			// The YAML library calls an int too big for 64 bits a float;
			// it is still an int.
			b.WriteString(strings.TrimPrefix(n.Value, "+"))
			return nil
		}
		lit, err := floatLiteral(n.Value)
		if err != nil {
			return fmt.Errorf("%s: %w", orRoot(path), err)
		}
		b.WriteString(lit)
	case "!!str", "!!binary", "!!timestamp":
		writeString(b, n.Value)
	default:
		return fmt.Errorf("%s: unsupported YAML tag %s", orRoot(path), n.ShortTag())
	}
	return nil
}

var decimalInt = regexp.MustCompile(`^[-+]?(0|[1-9][0-9]*)$`)

// floatLiteral spells a YAML float as a JSON number that still reads as a
// float: the author's digits when they are valid JSON, else Go's shortest
// repr with a ".0" when it would read as an int.
func floatLiteral(v string) (string, error) {
	f, err := strconv.ParseFloat(strings.ReplaceAll(v, "_", ""), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("float %q has no JSON spelling", v)
	}
	if json.Valid([]byte(v)) && strings.ContainsAny(v, ".eE") {
		return v, nil
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s, nil
}

func writeString(b *bytes.Buffer, s string) {
	out, _ := task.Encode(s) // a string always encodes
	b.Write(out)
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(document)"
	}
	return path
}
