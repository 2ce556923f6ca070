package pack

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"tolokaforge.io/operator/api/packfiles"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// Keys of the initial-state ConfigMap.
const (
	stateKeyGzip  = "tables.json.gz"
	stateKeyPlain = "tables.json"
)

// Manifests are the objects of one converted task.
type Manifests struct {
	Task *yaml.Node
	// ConfigMap holds the initial tables when they are not inline.
	ConfigMap *yaml.Node
	// StateRef is the Task's initialStateFrom (nil when inline).
	StateRef *evalv1.ConfigMapKeyRef
	// FilesConfigMap holds the bundle of the task's tool_artifacts, which
	// Files names; both nil when the task ships no files.
	FilesConfigMap *yaml.Node
	Files          *evalv1.PackFiles
	// Bundle is the files bundle to upload under BundleKey when
	// Options.FilesURL is set (FilesConfigMap is then nil).
	Bundle    []byte
	BundleKey string
}

// MaxConfigMapBundleBytes is the largest files bundle written to a
// ConfigMap: the API server refuses a ConfigMap over 1 MiB, and the rest
// leaves room for its metadata.
const MaxConfigMapBundleBytes = 1000 << 10

// filesBundle moves the description's tool_artifacts into a bundle. The
// ConfigMap's name carries the digest: re-importing a pack whose files
// changed writes a new ConfigMap instead of changing the one the Task on
// the cluster still names, so no Trial starting between the two applies
// reads files that do not match its digest.
func filesBundle(c *converted, filesURL func(string) string) (*evalv1.PackFiles, []byte, error) {
	arts := c.Description.ToolArtifacts
	if len(arts) == 0 {
		return nil, nil, nil
	}
	files := make(map[string][]byte, len(arts))
	for p, b64 := range arts {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, nil, fmt.Errorf("tool_artifacts[%q]: not base64: %w", p, err)
		}
		files[p] = b
	}
	bundle, err := packfiles.Build(files)
	if err != nil {
		return nil, nil, fmt.Errorf("tool_artifacts: %w", err)
	}
	d := packfiles.Digest(bundle)
	if filesURL != nil {
		return &evalv1.PackFiles{Digest: d, Size: int64(len(bundle)), URL: filesURL(packfiles.StoreKey(d))}, bundle, nil
	}
	if len(bundle) > MaxConfigMapBundleBytes {
		return nil, nil, fmt.Errorf("tool_artifacts: the files bundle is %d bytes, over the ConfigMap limit of %d bytes; import with --store URL to keep it in the artifact store", len(bundle), MaxConfigMapBundleBytes)
	}
	return &evalv1.PackFiles{Digest: d, Size: int64(len(bundle)), ConfigMap: c.Name + "-files-" + strings.TrimPrefix(d, "sha256:")[:12]}, bundle, nil
}

// stateRef decides where the tables go. Inline unless they are larger than
// the limit (gzip in binaryData) or hold a float literal with an integral
// value: the Kubernetes API stores custom resources as untyped JSON and
// writes 300.0 back as 300, and the canonical hash tells the two apart, so
// such tables travel verbatim in a ConfigMap's data.
func stateRef(c *converted, limit int) *evalv1.ConfigMapKeyRef {
	if c.Tables == nil {
		return nil
	}
	name := c.Name + "-initial-state"
	if len(c.Tables) > limit {
		return &evalv1.ConfigMapKeyRef{Name: name, Key: stateKeyGzip, Gzip: true}
	}
	if hasIntegralFloat(c.Tables) {
		return &evalv1.ConfigMapKeyRef{Name: name, Key: stateKeyPlain}
	}
	return nil
}

// hasIntegralFloat reports a number literal that reads as a float but whose
// value is an integer (300.0, 1e3).
func hasIntegralFloat(raw json.RawMessage) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		n, ok := tok.(json.Number)
		if !ok || !strings.ContainsAny(string(n), ".eE") {
			continue
		}
		if f, err := n.Float64(); err == nil && f == float64(int64(f)) {
			return true
		}
	}
}

// Build renders the manifests of c.
func Build(c *converted, opts Options) (*Manifests, error) {
	limit := opts.InlineLimit
	if limit <= 0 {
		limit = DefaultInlineLimit
	}
	m := &Manifests{StateRef: stateRef(c, limit)}
	desc := c.Wire
	if m.StateRef != nil {
		var err error
		if desc, err = withoutTables(c.Wire); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Dir, err)
		}
	}
	files, bundle, err := filesBundle(c, opts.FilesURL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Dir, err)
	}
	if files != nil {
		m.Files = files
		if desc, err = withoutKey(desc, "tool_artifacts"); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Dir, err)
		}
	}
	descNode, err := jsonNode(desc)
	if err != nil {
		return nil, fmt.Errorf("%s: render the description: %w", c.Dir, err)
	}
	spec := mapNode("description", descNode)
	if r := m.StateRef; r != nil {
		ref := mapNode("name", str(r.Name), "key", str(r.Key))
		if r.Gzip {
			ref = mapNode("name", str(r.Name), "key", str(r.Key), "gzip", boolNode(true))
		}
		spec.Content = append(spec.Content, str("initialStateFrom"), mapNode("configMapKeyRef", ref))
	}
	if f := m.Files; f != nil {
		files := mapNode("digest", str(f.Digest), "size", intNode(f.Size), "configMap", str(f.ConfigMap))
		if f.URL != "" {
			files = mapNode("digest", str(f.Digest), "size", intNode(f.Size), "url", str(f.URL))
		}
		spec.Content = append(spec.Content, str("files"), files)
	}
	if c.InitialUserMessage != "" {
		spec.Content = append(spec.Content, str("initialUserMessage"), str(c.InitialUserMessage))
	}
	if c.MaxTurns != nil {
		spec.Content = append(spec.Content, str("maxTurns"), intNode(int64(*c.MaxTurns)))
	}
	labels := map[string]string{evalv1.LabelTaskID: evalv1.LabelValue(c.Description.TaskID)}
	if cat := evalv1.LabelValue(c.Description.Category); cat != "" {
		labels["eval.tolokaforge.io/category"] = cat
	}
	for k, v := range opts.Labels {
		labels[k] = v
	}
	m.Task = mapNode(
		"apiVersion", str(evalv1.GroupVersion.String()),
		"kind", str("Task"),
		"metadata", objectMeta(c.Name, opts.Namespace, labels),
		"spec", spec,
	)
	if r := m.StateRef; r != nil {
		var data *yaml.Node
		if r.Gzip {
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			if _, err := zw.Write(c.Tables); err != nil {
				return nil, fmt.Errorf("%s: gzip the initial state: %w", c.Dir, err)
			}
			if err := zw.Close(); err != nil {
				return nil, fmt.Errorf("%s: gzip the initial state: %w", c.Dir, err)
			}
			data = mapNode("binaryData", mapNode(r.Key, str(base64.StdEncoding.EncodeToString(gz.Bytes()))))
		} else {
			data = mapNode("data", mapNode(r.Key, str(string(c.Tables))))
		}
		m.ConfigMap = mapNode(
			"apiVersion", str("v1"),
			"kind", str("ConfigMap"),
			"metadata", objectMeta(r.Name, opts.Namespace, map[string]string{evalv1.LabelTaskID: evalv1.LabelValue(c.Description.TaskID)}),
		)
		m.ConfigMap.Content = append(m.ConfigMap.Content, data.Content...)
	}
	if f := m.Files; f != nil && f.URL != "" {
		m.Bundle, m.BundleKey = bundle, packfiles.StoreKey(f.Digest)
	} else if f != nil {
		m.FilesConfigMap = mapNode(
			"apiVersion", str("v1"),
			"kind", str("ConfigMap"),
			"metadata", objectMeta(f.ConfigMap, opts.Namespace, map[string]string{evalv1.LabelTaskID: evalv1.LabelValue(c.Description.TaskID)}),
			"binaryData", mapNode(packfiles.ConfigMapKey, str(base64.StdEncoding.EncodeToString(bundle))),
		)
	}
	return m, nil
}

// WriteStream writes the manifests as one YAML stream, each ConfigMap
// before the Task that reads it.
func WriteStream(w io.Writer, ms []*Manifests) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	for _, m := range ms {
		for _, n := range []*yaml.Node{m.ConfigMap, m.FilesConfigMap, m.Task} {
			if n == nil {
				continue
			}
			if err := enc.Encode(n); err != nil {
				return fmt.Errorf("write manifests: %w", err)
			}
		}
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("write manifests: %w", err)
	}
	return nil
}

// withoutKey drops one top-level key of a JSON object.
func withoutKey(wire json.RawMessage, key string) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(wire, &top); err != nil {
		return nil, err
	}
	delete(top, key)
	return marshalOrdered(top)
}

func withoutTables(wire json.RawMessage) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(wire, &top); err != nil {
		return nil, err
	}
	var is map[string]json.RawMessage
	if err := json.Unmarshal(top["initial_state"], &is); err != nil {
		return nil, err
	}
	delete(is, "tables")
	b, err := marshalOrdered(is)
	if err != nil {
		return nil, err
	}
	top["initial_state"] = b
	return marshalOrdered(top)
}

// marshalOrdered marshals a map of raw values with sorted keys and no HTML
// escaping.
func marshalOrdered(m map[string]json.RawMessage) (json.RawMessage, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, k)
		b.WriteByte(':')
		b.Write(m[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func objectMeta(name, namespace string, labels map[string]string) *yaml.Node {
	meta := mapNode("name", str(name))
	if namespace != "" {
		meta.Content = append(meta.Content, str("namespace"), str(namespace))
	}
	if len(labels) > 0 {
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		l := mapNode()
		for _, k := range keys {
			l.Content = append(l.Content, str(k), str(labels[k]))
		}
		meta.Content = append(meta.Content, str("labels"), l)
	}
	return meta
}

func mapNode(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, str(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

func str(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	switch {
	case strings.Contains(s, "\n") && isLiteralSafe(s):
		n.Style = yaml.LiteralStyle
	case yaml11Special(s):
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// yaml11Special reports a string kubectl's YAML 1.1 reader would not read
// back as that string if written plain: the 1.1 booleans and nulls (y, n,
// on, off, ...) and anything that may read as a number (1_000, 0o17, .5).
// The YAML 1.2 encoder only quotes what 1.2 resolves.
func yaml11Special(s string) bool {
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "":
		return true
	}
	return strings.IndexAny(s[:1], "0123456789+-.") == 0
}

// isLiteralSafe: a block scalar cannot carry trailing spaces on a line or
// control characters faithfully; those strings are double-quoted.
func isLiteralSafe(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if strings.HasSuffix(line, " ") || strings.HasSuffix(line, "\t") {
			return false
		}
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' || r == 0x7f || r == '\uFEFF' {
			return false
		}
	}
	return !strings.HasPrefix(s, " ") && !strings.HasPrefix(s, "\n")
}

func boolNode(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

func intNode(i int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(i, 10)}
}

// jsonNode renders JSON as a YAML node tree: key order kept, ints as ints,
// floats spelled with a "." so both YAML 1.1 (kubectl) and 1.2 read them as
// floats.
func jsonNode(raw json.RawMessage) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := readNode(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return n, nil
}

func readNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			n := mapNode()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				val, err := readNode(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, str(kt.(string)), val)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		case '[':
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for dec.More() {
				val, err := readNode(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, val)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		}
		return nil, fmt.Errorf("unexpected %v", v)
	case string:
		return str(v), nil
	case bool:
		return boolNode(v), nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	case json.Number:
		s := string(v)
		if !strings.ContainsAny(s, ".eE") {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: s}, nil
		}
		if strings.ContainsAny(s, "eE") {
			f, err := v.Float64()
			if err != nil {
				return nil, err
			}
			s = strconv.FormatFloat(f, 'e', -1, 64)
			if mant, exp, ok := strings.Cut(s, "e"); ok && !strings.Contains(mant, ".") {
				s = mant + ".0e" + exp
			}
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: s}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// Converted is one task directory converted (ConvertContext's result), for
// callers that hold several before building their manifests (`pack build`).
type Converted = converted

// SetEnvironmentImage pins the task's environment image (`pack build`'s
// digest reference) in both the description and its wire form, before
// Build renders the Task. The result must still decode.
func (c *converted) SetEnvironmentImage(ref string) error {
	if c.Description == nil || c.Description.Environment == nil {
		return fmt.Errorf("%s: the task has no environment to set an image in", c.Dir)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(c.Wire, &top); err != nil {
		return fmt.Errorf("%s: %w", c.Dir, err)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(top["environment"], &env); err != nil {
		return fmt.Errorf("%s: environment: %w", c.Dir, err)
	}
	img, err := json.Marshal(ref)
	if err != nil {
		return err
	}
	env["image"] = img
	if top["environment"], err = marshalOrdered(env); err != nil {
		return err
	}
	wire, err := marshalOrdered(top)
	if err != nil {
		return err
	}
	desc, err := task.DecodeTaskDescription(wire)
	if err != nil {
		return fmt.Errorf("%s: with image %q the description does not decode: %w", c.Dir, ref, err)
	}
	c.Wire, c.Description = wire, desc
	return nil
}
