package controllers

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/examples/shop"
)

// TestTaskValidAcceptsRefusalShapedHash: admission accepts hash_enabled with
// golden_actions: [] (a refusal task, graded against the initial state, alone or
// beside jsonpaths with a hash_weight): Valid is True and the decoded description
// keeps the empty golden path declared. An absent golden_actions is refused
// (TestTaskValidRefusesUngradableGrading).
func TestTaskValidAcceptsRefusalShapedHash(t *testing.T) {
	for _, grading := range []string{
		`{"weights":{"state_checks":1},"state_checks":{"hash_enabled":true,"golden_actions":[]}}`,
		`{"weights":{"state_checks":1},"state_checks":{"hash_enabled":true,"golden_actions":[],"hash_weight":0.5,
			"jsonpaths":[{"path":"$.db.orders[0].status","equals":"paid"}]}}`,
	} {
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(shop.TaskJSON(), &doc); err != nil {
			t.Fatal(err)
		}
		doc["grading"] = json.RawMessage(grading)
		raw, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := decodeDescription(raw, "spec.description")
		if err != nil {
			t.Fatalf("%s: refused at admission: %v", grading, err)
		}
		if sc := desc.Grading.StateChecks; sc.GoldenActions == nil || len(sc.GoldenActions) != 0 {
			t.Fatalf("%s: golden_actions = %#v, want declared and empty", grading, sc.GoldenActions)
		}
		st := taskStatusFor(&evalv1.Task{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, &resolvedTask{Desc: desc}, nil)
		if cond := meta.FindStatusCondition(st.Conditions, evalv1.TaskValid); cond == nil || cond.Status != metav1.ConditionTrue || cond.Message != `task "shop_orders_02": 4 agent tools, 0 user tools, 0 golden actions` {
			t.Errorf("%s: Valid = %+v, want True", grading, cond)
		}
	}
}
