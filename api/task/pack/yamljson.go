package pack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"tolokaforge.io/operator/api/task"
)

// The alias budget of every YAML file a pack holds. Aliases are kept in the
// node tree unexpanded, but every walk of the tree (to JSON, to a
// diagnostic) expands them, so a 2 KB file of aliases nested nine deep (a
// "billion laughs") would expand to 10^9 nodes. Real packs share a default
// block or two: a few thousand expanded nodes at most.
const (
	// maxAliasNodes bounds the nodes aliases add to a document once
	// expanded.
	maxAliasNodes = 10000
	// maxAliasDepth bounds aliases reached through aliases.
	maxAliasDepth = 5
)

// parseYAML reads one YAML document into its node tree (nil for an empty
// document), refusing it past the alias budget. ctx ends the read: the
// parser pulls its input through a reader that stops once ctx is done.
func parseYAML(ctx context.Context, data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(ctxReader{ctx, bytes.NewReader(data)}).Decode(&doc); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, io.EOF) {
			return nil, nil // no document at all
		}
		return nil, err
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	if err := checkAliases(&doc); err != nil {
		return nil, err
	}
	return resolve(doc.Content[0]), nil
}

// ctxReader fails its reads once ctx is done, so a long parse of a large
// file ends when the import is canceled (SIGTERM).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// checkAliases measures what the document's aliases expand to without
// expanding them: each node's expanded size and alias depth is computed
// once (memoized), so the check is linear in the file. It refuses a cycle
// (an alias inside the node it names), which no walk would ever finish.
func checkAliases(doc *yaml.Node) error {
	type measure struct {
		size  int64 // nodes once expanded, saturating
		depth int   // aliases within aliases
	}
	const saturated = int64(1) << 60
	memo := map[*yaml.Node]measure{}
	onPath := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node) (measure, error)
	walk = func(n *yaml.Node) (measure, error) {
		if n == nil {
			return measure{}, nil
		}
		if m, ok := memo[n]; ok {
			return m, nil
		}
		onPath[n] = true
		defer delete(onPath, n)
		var m measure
		if n.Kind == yaml.AliasNode {
			if onPath[n.Alias] {
				return measure{}, fmt.Errorf("line %d: alias *%s refers to a node that contains it (a cycle); refused", n.Line, n.Value)
			}
			t, err := walk(n.Alias)
			if err != nil {
				return measure{}, err
			}
			m = measure{size: t.size, depth: t.depth + 1}
			if m.depth > maxAliasDepth {
				return measure{}, fmt.Errorf("line %d: aliases nest more than %d deep (the alias depth budget); refused", n.Line, maxAliasDepth)
			}
		} else {
			m.size = 1
			for _, c := range n.Content {
				cm, err := walk(c)
				if err != nil {
					return measure{}, err
				}
				m.size = min(m.size+cm.size, saturated)
				m.depth = max(m.depth, cm.depth)
			}
		}
		memo[n] = m
		return m, nil
	}
	m, err := walk(doc)
	if err != nil {
		return err
	}
	// The nodes the file holds are len(memo); the rest are copies aliases
	// make.
	if added := m.size - int64(len(memo)); added > maxAliasNodes {
		return fmt.Errorf("aliases expand to more than %d nodes (the alias budget); refused as an alias bomb", maxAliasNodes)
	}
	return nil
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
