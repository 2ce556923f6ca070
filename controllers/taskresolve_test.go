package controllers

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/examples/shop"
)

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestMergeInitialState(t *testing.T) {
	tables := `{"orders":[],"products":[{"id":"P-1","price":300.0}]}`
	for _, tc := range []struct {
		name, desc, tables, want, wantErr string
	}{
		{name: "adds tables to an existing initial_state",
			desc:   `{"task_id":"t","initial_state":{"schemas":[],"unstable_fields":[]}}`,
			tables: tables,
			want:   `{"initial_state":{"schemas":[],"tables":{"orders":[],"products":[{"id":"P-1","price":300.0}]},"unstable_fields":[]},"task_id":"t"}`},
		{name: "creates initial_state", desc: `{"task_id":"t"}`, tables: ` {"a":[]} `,
			want: `{"initial_state":{"tables":{"a":[]}},"task_id":"t"}`},
		{name: "null initial_state", desc: `{"initial_state":null}`, tables: `{}`,
			want: `{"initial_state":{"tables":{}}}`},
		{name: "keeps text verbatim", desc: `{"p":"<b>&"}`, tables: `{"t":[{"s":"<x>"}]}`,
			want: `{"initial_state":{"tables":{"t":[{"s":"<x>"}]}},"p":"<b>&"}`},
		{name: "both inline and by reference", desc: `{"initial_state":{"tables":{"x":[]}}}`, tables: tables,
			wantErr: "spec.description.initial_state.tables is set inline and by initialStateFrom; use one"},
		{name: "tables not an object", desc: `{}`, tables: `[1,2]`,
			wantErr: "initialStateFrom: want a JSON object of tables (name to records), got an array"},
		{name: "tables not JSON", desc: `{}`, tables: `{"a":`,
			wantErr: "initialStateFrom: want a JSON object of tables (name to records), got invalid JSON"},
		{name: "empty tables value", desc: `{}`, tables: ``,
			wantErr: "initialStateFrom: want a JSON object of tables (name to records), got nothing"},
		{name: "initial_state not an object", desc: `{"initial_state":[]}`, tables: `{}`,
			wantErr: "spec.description.initial_state: want a JSON object"},
		{name: "description not an object", desc: `"x"`, tables: `{}`,
			wantErr: "spec.description: want a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mergeInitialState([]byte(tc.desc), []byte(tc.tables))
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want prefix %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("merged = %s\nwant     %s", got, tc.want)
			}
		})
	}
}

// FuzzMergeInitialState: never panics; a merge that succeeds yields a JSON
// object whose initial_state.tables is the input tables, byte for byte
// after compaction.
func FuzzMergeInitialState(f *testing.F) {
	f.Add([]byte(`{"task_id":"t","initial_state":{"schemas":[]}}`), []byte(`{"a":[{"x":1.0}]}`))
	f.Add([]byte(`{}`), []byte(`{}`))
	f.Add([]byte(`{"initial_state":{"tables":null}}`), []byte(`{"b":[]}`))
	f.Add([]byte(`{"initial_state":{"tables":{}}}`), []byte(`{"b":[]}`))
	f.Add([]byte(`[]`), []byte(`{}`))
	f.Add([]byte(`{"a":1}`), []byte(`{"x":1e400}`))
	f.Fuzz(func(t *testing.T, desc, tables []byte) {
		out, err := mergeInitialState(desc, tables)
		if err != nil {
			return
		}
		var top struct {
			InitialState struct {
				Tables json.RawMessage `json:"tables"`
			} `json:"initial_state"`
		}
		if err := json.Unmarshal(out, &top); err != nil {
			t.Fatalf("merged output is not an object with initial_state: %v\n%s", err, out)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, tables); err != nil {
			t.Fatalf("accepted tables that do not compact: %v", err)
		}
		var got bytes.Buffer
		if err := json.Compact(&got, top.InitialState.Tables); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(unescapeHTML(got.Bytes()), unescapeHTML(want.Bytes())) {
			t.Fatalf("tables changed:\n got %s\nwant %s", got.Bytes(), want.Bytes())
		}
	})
}

// unescapeHTML undoes the \u003c-style escapes json.Compact leaves alone but
// an encoder may add, so the comparison is about values, not spelling.
func unescapeHTML(b []byte) []byte {
	r := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")
	return []byte(r.Replace(string(b)))
}

func TestConfigMapValue(t *testing.T) {
	plain := []byte(`{"a":[]}`)
	cm := &corev1.ConfigMap{
		Data:       map[string]string{"plain": string(plain)},
		BinaryData: map[string][]byte{"z": gz(t, plain), "bin": plain, "bad": []byte("this is plain text, not gzip")},
	}
	for _, tc := range []struct {
		name    string
		ref     evalv1.ConfigMapKeyRef
		want    string
		wantErr string
	}{
		{"data", evalv1.ConfigMapKeyRef{Key: "plain"}, string(plain), ""},
		{"binaryData", evalv1.ConfigMapKeyRef{Key: "bin"}, string(plain), ""},
		{"gzip", evalv1.ConfigMapKeyRef{Key: "z", Gzip: true}, string(plain), ""},
		{"gzip in data", evalv1.ConfigMapKeyRef{Key: "plain", Gzip: true}, "", "gzip: true needs the value in binaryData, found it in data"},
		{"gzip without the flag", evalv1.ConfigMapKeyRef{Key: "z"}, "", "value is gzip-compressed; set gzip: true"},
		{"not gzip", evalv1.ConfigMapKeyRef{Key: "bad", Gzip: true}, "", "gunzip: gzip: invalid header"},
		{"missing", evalv1.ConfigMapKeyRef{Key: "nope"}, "", "key not found in data or binaryData"},
		{"missing gzip", evalv1.ConfigMapKeyRef{Key: "nope", Gzip: true}, "", "key not found in binaryData"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := configMapValue(cm, tc.ref)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v", got, err)
			}
		})
	}
}

func TestGunzipRefusesABomb(t *testing.T) {
	bomb := gz(t, bytes.Repeat([]byte{'0'}, 1<<20))
	if _, err := gunzip(bomb, 1<<10); err == nil || err.Error() != "gunzip: decompressed value exceeds 1024 bytes" {
		t.Fatalf("err = %v", err)
	}
	if out, err := gunzip(bomb, 1<<20); err != nil || len(out) != 1<<20 {
		t.Fatalf("exact limit: %d bytes, %v", len(out), err)
	}
}

func TestResolveTaskSpec(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var full map[string]json.RawMessage
	if err := json.Unmarshal(shop.TaskJSON(), &full); err != nil {
		t.Fatal(err)
	}
	var st map[string]json.RawMessage
	if err := json.Unmarshal(full["initial_state"], &st); err != nil {
		t.Fatal(err)
	}
	tables := st["tables"]
	delete(st, "tables")
	full["initial_state"], _ = json.Marshal(st)
	noTables, _ := json.Marshal(full)

	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "state"},
		BinaryData: map[string][]byte{"t.gz": gz(t, tables)},
	}).Build()
	ctx := context.Background()

	spec := &evalv1.TaskSpec{
		Description:        apiextensionsv1.JSON{Raw: noTables},
		InitialStateFrom:   &evalv1.InitialStateSource{ConfigMapKeyRef: evalv1.ConfigMapKeyRef{Name: "state", Key: "t.gz", Gzip: true}},
		InitialUserMessage: "hi",
	}
	rt, err := resolveTaskSpec(ctx, c, nil, "ns", spec)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Desc.TaskID != "shop_orders_02" || len(rt.Desc.InitialState.Tables) != 3 || rt.InitialUserMessage != "hi" {
		t.Errorf("resolved = %q tables %d msg %q", rt.Desc.TaskID, len(rt.Desc.InitialState.Tables), rt.InitialUserMessage)
	}
	// The number literal survives: 300.0 stays a float for the hash.
	if !bytes.Contains(rt.Desc.InitialState.Tables["customers"], []byte(`300.0`)) {
		t.Errorf("customers = %s", rt.Desc.InitialState.Tables["customers"])
	}

	spec.InitialStateFrom.ConfigMapKeyRef.Name = "absent"
	_, err = resolveTaskSpec(ctx, c, nil, "ns", spec)
	te, ok := err.(*taskError)
	if !ok || te.Reason != evalv1.ReasonInitialStateUnavailable || !te.Transient ||
		te.Error() != `initialStateFrom configMap ns/absent key "t.gz": configMap not found` {
		t.Errorf("err = %#v", err)
	}

	bad := &evalv1.TaskSpec{Description: apiextensionsv1.JSON{Raw: []byte(`{"task_id":"x","agent_tools":[{"name":"a","nope":1}]}`)}}
	_, err = resolveTaskSpec(ctx, c, nil, "ns", bad)
	te, ok = err.(*taskError)
	if !ok || te.Reason != evalv1.ReasonInvalidDescription || te.Transient ||
		te.Error() != "spec.description.agent_tools[0].nope: unknown key" {
		t.Errorf("err = %#v", err)
	}
}

func TestSummarize(t *testing.T) {
	rt, err := decodeDescription(shop.TaskJSON(), "spec.description")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summarize(rt), (taskSummary{TaskID: "shop_orders_02", Category: "tool_use", AgentTools: 4, GoldenActions: 2}); got != want {
		t.Errorf("summary = %+v, want %+v", got, want)
	}
	if _, err := decodeDescription(nil, "spec.task"); err == nil || err.Error() != "spec.task is empty" {
		t.Errorf("empty: %v", err)
	}
}
