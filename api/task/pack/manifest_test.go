package pack

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"tolokaforge.io/operator/runner/tools/builtin"

	corev1 "k8s.io/api/core/v1"
	sigyaml "sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/packfiles"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// readStream reads a manifest stream the way kubectl does (sigs.k8s.io/yaml).
func readStream(t *testing.T, stream []byte) ([]*evalv1.Task, []*corev1.ConfigMap) {
	t.Helper()
	var tasks []*evalv1.Task
	var cms []*corev1.ConfigMap
	for _, doc := range strings.Split(string(stream), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		js, err := sigyaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("kubectl could not read:\n%s\n%v", doc, err)
		}
		var head struct{ Kind string }
		if err := json.Unmarshal(js, &head); err != nil {
			t.Fatal(err)
		}
		switch head.Kind {
		case "Task":
			var tk evalv1.Task
			if err := json.Unmarshal(js, &tk); err != nil {
				t.Fatal(err)
			}
			tasks = append(tasks, &tk)
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := json.Unmarshal(js, &cm); err != nil {
				t.Fatal(err)
			}
			cms = append(cms, &cm)
		default:
			t.Fatalf("unexpected kind %q", head.Kind)
		}
	}
	return tasks, cms
}

// merged is the description a Task resolves to: inline, or with the
// ConfigMap's tables put back.
func merged(t *testing.T, tk *evalv1.Task, cms []*corev1.ConfigMap) []byte {
	t.Helper()
	ref := tk.Spec.InitialStateFrom
	if ref == nil {
		return tk.Spec.Description.Raw
	}
	var tables []byte
	for _, cm := range cms {
		if cm.Name != ref.ConfigMapKeyRef.Name {
			continue
		}
		if ref.ConfigMapKeyRef.Gzip {
			zr, err := gzip.NewReader(bytes.NewReader(cm.BinaryData[ref.ConfigMapKeyRef.Key]))
			if err != nil {
				t.Fatal(err)
			}
			if tables, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		} else {
			tables = []byte(cm.Data[ref.ConfigMapKeyRef.Key])
		}
	}
	if tables == nil {
		t.Fatalf("ConfigMap %s/%s not in the stream", ref.ConfigMapKeyRef.Name, ref.ConfigMapKeyRef.Key)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(tk.Spec.Description.Raw, &top); err != nil {
		t.Fatal(err)
	}
	var is map[string]json.RawMessage
	if err := json.Unmarshal(top["initial_state"], &is); err != nil {
		t.Fatal(err)
	}
	if _, inline := is["tables"]; inline {
		t.Fatal("tables both inline and in a ConfigMap")
	}
	is["tables"] = tables
	top["initial_state"], _ = marshalOrdered(is)
	out, _ := marshalOrdered(top)
	return out
}

func TestManifestsRoundTripThroughKubectlYAML(t *testing.T) {
	for _, tc := range []struct {
		dir     string
		wantRef *evalv1.ConfigMapKeyRef
	}{
		// 300.00 would come back from the API as 300: kept verbatim in data.
		{fixture("shop_orders_02"), &evalv1.ConfigMapKeyRef{Name: "shop-orders-02-initial-state", Key: stateKeyPlain}},
		{fixture("calc_basic"), nil},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			opts := Options{Builtins: builtin.Catalog{}, Namespace: "evals", Labels: map[string]string{"suite": "s1"}}
			c, err := Convert(tc.dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Build(c, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m.StateRef, tc.wantRef) {
				t.Fatalf("state ref %+v, want %+v", m.StateRef, tc.wantRef)
			}
			var out bytes.Buffer
			if err := WriteStream(&out, []*Manifests{m}); err != nil {
				t.Fatal(err)
			}
			tasks, cms := readStream(t, out.Bytes())
			if len(tasks) != 1 || len(cms) != map[bool]int{true: 1}[tc.wantRef != nil] {
				t.Fatalf("%d tasks, %d configmaps", len(tasks), len(cms))
			}
			tk := tasks[0]
			if tk.Name != c.Name || tk.Namespace != "evals" || tk.Labels["suite"] != "s1" || tk.Labels["eval.tolokaforge.io/task-id"] != c.Description.TaskID {
				t.Fatalf("metadata %+v", tk.ObjectMeta)
			}
			if tk.Spec.InitialUserMessage != c.InitialUserMessage || !reflect.DeepEqual(tk.Spec.MaxTurns, c.MaxTurns) {
				t.Fatalf("host fields %q %v", tk.Spec.InitialUserMessage, tk.Spec.MaxTurns)
			}
			raw := merged(t, tk, cms)
			got, err := task.DecodeTaskDescription(raw)
			if err != nil {
				t.Fatalf("the manifest's description does not decode: %v", err)
			}
			if a, b := semantic(t, got), semantic(t, c.Description); !reflect.DeepEqual(a, b) {
				t.Fatalf("description changed on the way through YAML:\n%v\n%v", a, b)
			}
			if tc.wantRef != nil && !bytes.Contains(raw, []byte(`"balance":300.00`)) {
				t.Fatalf("the float literal did not survive: %s", raw)
			}
		})
	}
}

func TestLargeStateGoesToGzipConfigMap(t *testing.T) {
	var rows []string
	for i := 0; i < 200; i++ {
		rows = append(rows, fmt.Sprintf(`{"id":"r%03d","v":%d.5}`, i, i))
	}
	dir := writePack(t, "big", map[string]string{
		"task.yaml": minimalTask + "initial_state: {json_db: db.json}\nsystem_prompt: p.md\n",
		"p.md":      "p",
		"db.json":   `{"rows": [` + strings.Join(rows, ",") + `]}`,
	})
	opts := Options{Builtins: builtin.Catalog{}, InlineLimit: 1024}
	c, err := Convert(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := (&evalv1.ConfigMapKeyRef{Name: "mini-initial-state", Key: stateKeyGzip, Gzip: true}); !reflect.DeepEqual(m.StateRef, want) {
		t.Fatalf("state ref %+v", m.StateRef)
	}
	var out bytes.Buffer
	if err := WriteStream(&out, []*Manifests{m}); err != nil {
		t.Fatal(err)
	}
	if strings.Index(out.String(), "kind: ConfigMap") > strings.Index(out.String(), "kind: Task") {
		t.Fatal("the ConfigMap must come before the Task that reads it")
	}
	tasks, cms := readStream(t, out.Bytes())
	raw := merged(t, tasks[0], cms)
	if _, err := task.DecodeTaskDescription(raw); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`{"id":"r199","v":199.5}`)) {
		t.Fatal("rows lost")
	}
	// Small enough and no integral float: inline.
	c.Tables = json.RawMessage(`{"t":[{"id":"a","v":1.5}]}`)
	if r := stateRef(c, DefaultInlineLimit); r != nil {
		t.Fatalf("inline state went out of line: %+v", r)
	}
}

func TestHasIntegralFloat(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":300.0}`:          true,
		`{"a":[{"b":1e3}]}`:    true,
		`{"a":300}`:            false,
		`{"a":34.5,"b":"1.0"}`: false,
		`{"a":-0.0}`:           true,
	} {
		if got := hasIntegralFloat(json.RawMessage(in)); got != want {
			t.Errorf("hasIntegralFloat(%s) = %v", in, got)
		}
	}
}

func TestJSONNodeKeepsTypesThroughYAML(t *testing.T) {
	in := `{"s":"true","n":"12","y":"on","u":"1_000","o":"0o17","dash":"-","k":"-x","multi":"a\nb\n","trail":"x \ny","i":14,"f":300.0,"e":1e-05,"big":1E21,"null":null,"b":false,"nested":{"l":[1,2.5,"x"]}}`
	n, err := jsonNode(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteStream(&out, []*Manifests{{Task: n}}); err != nil {
		t.Fatal(err)
	}
	js, err := sigyaml.YAMLToJSON(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	_ = json.Unmarshal(js, &got)
	_ = json.Unmarshal([]byte(in), &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("through YAML 1.1:\n%s\n%v\nwant %v", out.String(), got, want)
	}
	for _, lit := range []string{"f: 300.0", "e: 1.0e-05", "big: 1.0e+21"} {
		if !strings.Contains(out.String(), lit) {
			t.Errorf("missing %q in\n%s", lit, out.String())
		}
	}
}

func TestNodeJSONLiterals(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{"a: 300.00\nb: 14\nc: 1e3\nd: 0x1F\ne: '12'\nf: ~\ng: [yes, true]\nh: .5\n", `{"a":300.00,"b":14,"c":1e3,"d":31,"e":"12","f":null,"g":["yes",true],"h":0.5}`, ""},
		{"a: &x {b: 1}\nc: *x\n", `{"a":{"b":1},"c":{"b":1}}`, ""},
		{"a: .inf\n", "", "a: float \".inf\" has no JSON spelling"},
		{"a: 99999999999999999999\nb: -12\n", `{"a":99999999999999999999,"b":-12}`, ""},
		{"? [a]\n: 1\n", "", "a mapping key must be a scalar"},
	}
	for _, tc := range cases {
		n, err := parseYAML(context.Background(), []byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		got, err := nodeJSON(n)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: got %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// TestToolArtifactsGoToABundle: a Python pack's files leave the Task for a
// ConfigMap holding one bundle, which the Task names by digest and size;
// the bundle holds exactly the converted tool_artifacts, and importing
// again gives the same bytes.
func TestToolArtifactsGoToABundle(t *testing.T) {
	opts := Options{Builtins: builtin.Catalog{}, Namespace: "evals"}
	dir := filepath.Join(fixtures, "projects/food_delivery_2/tasks/order_six_items_golden")
	build := func() ([]byte, *converted, *Manifests) {
		c, err := Convert(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Description.ToolArtifacts) < 10 {
			t.Fatalf("fixture ships %d files; want a Python pack", len(c.Description.ToolArtifacts))
		}
		m, err := Build(c, opts)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := WriteStream(&out, []*Manifests{m}); err != nil {
			t.Fatal(err)
		}
		return out.Bytes(), c, m
	}
	stream, c, m := build()
	again, _, _ := build()
	if !bytes.Equal(stream, again) {
		t.Fatal("two imports of one pack differ")
	}
	tasks, cms := readStream(t, stream)
	if len(tasks) != 1 || m.Files == nil {
		t.Fatalf("%d tasks, files %+v", len(tasks), m.Files)
	}
	tk := tasks[0]
	if !reflect.DeepEqual(tk.Spec.Files, m.Files) {
		t.Fatalf("spec.files = %+v, want %+v", tk.Spec.Files, m.Files)
	}
	if bytes.Contains(tk.Spec.Description.Raw, []byte("tool_artifacts")) {
		t.Fatal("tool_artifacts still inline in the Task")
	}
	wantName := c.Name + "-files-" + strings.TrimPrefix(m.Files.Digest, "sha256:")[:12]
	var bundle []byte
	for _, cm := range cms {
		if cm.Name == wantName {
			bundle = cm.BinaryData[packfiles.ConfigMapKey]
			if cm.Namespace != "evals" || cm.Labels[evalv1.LabelTaskID] != "order_six_items_golden" {
				t.Errorf("configMap metadata %+v", cm.ObjectMeta)
			}
		}
	}
	if bundle == nil {
		t.Fatalf("no ConfigMap %s with key %s in the stream", wantName, packfiles.ConfigMapKey)
	}
	if strings.Index(string(stream), "name: "+wantName) > strings.Index(string(stream), "kind: Task") {
		t.Error("the files ConfigMap must come before the Task that reads it")
	}
	files, err := packfiles.Open(bundle, packfiles.Ref{Digest: tk.Spec.Files.Digest, Size: tk.Spec.Files.Size}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(c.Description.ToolArtifacts) {
		t.Fatalf("bundle holds %d files, want %d", len(files), len(c.Description.ToolArtifacts))
	}
	for p, b64 := range c.Description.ToolArtifacts {
		if base64.StdEncoding.EncodeToString(files[p]) != b64 {
			t.Errorf("%s differs in the bundle", p)
		}
	}
}

func TestFilesBundleOverTheConfigMapLimitIsRefused(t *testing.T) {
	big := make([]byte, MaxConfigMapBundleBytes)
	c := &converted{Name: "big", Description: &task.TaskDescription{ToolArtifacts: map[string]string{"blob.bin": base64.StdEncoding.EncodeToString(big)}}}
	_, _, err := filesBundle(c, nil)
	want := "tool_artifacts: the files bundle is 1025536 bytes, over the ConfigMap limit of 1024000 bytes; import with --store URL to keep it in the artifact store"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	// The store form takes it, under its content address.
	f, bundle, err := filesBundle(c, func(key string) string { return "s3://b/p/" + key })
	if err != nil {
		t.Fatal(err)
	}
	hex := strings.TrimPrefix(packfiles.Digest(bundle), "sha256:")
	if f.URL != "s3://b/p/packs/sha256/"+hex+".tar" || f.ConfigMap != "" || f.Size != int64(len(bundle)) || f.Digest != "sha256:"+hex {
		t.Errorf("files = %+v", f)
	}
}

// With Options.FilesURL the Task names the bundle by URL and the stream
// holds no files ConfigMap; the bundle and its key are left to the caller.
func TestBuildWithStoreWritesNoFilesConfigMap(t *testing.T) {
	big := make([]byte, MaxConfigMapBundleBytes)
	c := &converted{Name: "big", Dir: "big", Wire: []byte(`{"task_id":"big","tool_artifacts":{}}`),
		Description: &task.TaskDescription{TaskID: "big", ToolArtifacts: map[string]string{"blob.bin": base64.StdEncoding.EncodeToString(big)}}}
	m, err := Build(c, Options{FilesURL: func(key string) string { return "file:///store/" + key }})
	if err != nil {
		t.Fatal(err)
	}
	if m.FilesConfigMap != nil {
		t.Error("a files ConfigMap was built for a bundle in the store")
	}
	d := packfiles.Digest(m.Bundle)
	if m.BundleKey != packfiles.StoreKey(d) || m.Files.URL != "file:///store/"+m.BundleKey || m.Files.Digest != d {
		t.Errorf("key %q files %+v", m.BundleKey, m.Files)
	}
	var out strings.Builder
	if err := WriteStream(&out, []*Manifests{m}); err != nil {
		t.Fatal(err)
	}
	want := "  files:\n    digest: " + d + "\n    size: " + strconv.Itoa(len(m.Bundle)) + "\n    url: file:///store/" + m.BundleKey + "\n"
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "kind: ConfigMap") || strings.Contains(out.String(), "tool_artifacts") {
		t.Errorf("stream:\n%s\nwant it to contain\n%s", out.String(), want)
	}
}
