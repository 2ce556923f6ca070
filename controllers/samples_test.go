package controllers

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/examples/shop"
)

const samplesDir = "../config/samples"

func readSample(t *testing.T, name string, into any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(samplesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// sampleTask resolves a sample Task the way the controller does, with the
// sample ConfigMap.
func sampleTask(t *testing.T, file string) (*evalv1.Task, *task.TaskDescription) {
	t.Helper()
	var cm corev1.ConfigMap
	readSample(t, "configmap_shop_orders_02_state.yaml", &cm)
	var tk evalv1.Task
	readSample(t, file, &tk)
	ref := tk.Spec.InitialStateFrom.ConfigMapKeyRef
	if ref.Name != cm.Name {
		t.Fatalf("%s reads configMap %q, the sample is %q", file, ref.Name, cm.Name)
	}
	tables, err := configMapValue(&cm, ref)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := mergeInitialState(tk.Spec.Description.Raw, tables)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := decodeDescription(merged, "spec.description")
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return &tk, desc
}

// compactTables makes table JSON comparable across indentation.
var compactTables = cmp.Transformer("compact", func(r json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, r); err != nil {
		return "invalid: " + string(r)
	}
	return b.String()
})

// TestSamplesMatchTheShopPack: the sample Task is shop.TaskJSON() exactly,
// tables and their number literals included; the wrong one differs only by
// its setup and names.
func TestSamplesMatchTheShopPack(t *testing.T) {
	want, err := task.DecodeTaskDescription(shop.TaskJSON())
	if err != nil {
		t.Fatal(err)
	}
	tk, got := sampleTask(t, "eval_v1alpha1_task_shop.yaml")
	if diff := cmp.Diff(want, got, compactTables); diff != "" {
		t.Errorf("sample task differs from the pack (-pack +sample):\n%s", diff)
	}
	if !bytes.Contains(got.InitialState.Tables["customers"], []byte("300.0")) {
		t.Errorf("balance lost its float literal: %s", got.InitialState.Tables["customers"])
	}
	if tk.Spec.MaxTurns == nil || *tk.Spec.MaxTurns != 14 || tk.Spec.InitialUserMessage == "" {
		t.Errorf("host-side fields: maxTurns %v message %q", tk.Spec.MaxTurns, tk.Spec.InitialUserMessage)
	}

	_, wrong := sampleTask(t, "eval_v1alpha1_task_shop_wrong_golden.yaml")
	if len(wrong.InitializationActions) != 1 || wrong.InitializationActions[0].ToolName != "place_order" {
		t.Errorf("wrong task setup = %+v", wrong.InitializationActions)
	}
	wrong.InitializationActions = want.InitializationActions
	wrong.TaskID, wrong.Name = want.TaskID, want.Name
	if diff := cmp.Diff(want, wrong, compactTables); diff != "" {
		t.Errorf("wrong task differs beyond its setup (-pack +sample):\n%s", diff)
	}

	for file, taskName := range map[string]string{
		"eval_v1alpha1_trial_oracle.yaml":              "shop-orders-02",
		"eval_v1alpha1_trial_oracle_wrong_golden.yaml": "shop-orders-02-wrong-golden",
	} {
		var tr evalv1.Trial
		readSample(t, file, &tr)
		if tr.Spec.TaskRef == nil || tr.Spec.TaskRef.Name != taskName || tr.Spec.Agent.Provider != evalv1.ProviderOracle {
			t.Errorf("%s: spec = %+v", file, tr.Spec)
		}
	}
}

func TestCampaignSampleNamesTheSampleTask(t *testing.T) {
	var c evalv1.Campaign
	readSample(t, "eval_v1alpha1_campaign_shop.yaml", &c)
	_, task := sampleTask(t, "eval_v1alpha1_task_shop.yaml")
	if len(c.Spec.Tasks.Names) != 1 || c.Spec.Tasks.Names[0] != "shop-orders-02" || task.TaskID == "" ||
		c.Spec.TrialsPerTask != 3 || len(c.Spec.Agents) != 1 || c.Spec.Agents[0].Model.Provider != evalv1.ProviderOracle ||
		c.Spec.MaxParallel != 3 {
		t.Errorf("campaign sample spec = %+v", c.Spec)
	}
}

// TestSamplesApplyWithoutKueue: `kubectl apply -f config/samples/` (make demo,
// the README, tolokaforge dev) must work on a cluster without Kueue, so the
// top folder holds only our kinds and core ones with no queue label; Kueue's
// samples live in config/samples/kueue/, which that apply does not read.
func TestSamplesApplyWithoutKueue(t *testing.T) {
	ents, err := os.ReadDir(samplesDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if e.IsDir() || filepath.Ext(e.Name()) != ".yaml" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(samplesDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(b, []byte("\n---")) {
			var obj struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			if obj.Kind == "" {
				continue
			}
			n++
			if obj.APIVersion != evalv1.GroupVersion.String() && obj.APIVersion != "v1" {
				t.Errorf("%s: %s %s is not ours or core: kubectl apply -f config/samples/ fails without its CRD (put it under a subfolder)", e.Name(), obj.APIVersion, obj.Kind)
			}
			if q, ok := obj.Metadata.Labels["kueue.x-k8s.io/queue-name"]; ok {
				t.Errorf("%s: %s names the Kueue queue %q: it would wait forever, or run unqueued, where Kueue is not installed", e.Name(), obj.Kind, q)
			}
		}
	}
	if n == 0 {
		t.Fatal("no sample objects read")
	}
}
