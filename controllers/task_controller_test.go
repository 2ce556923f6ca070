package controllers

import (
	"encoding/json"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/examples/shop"
)

func TestTaskStatusFor(t *testing.T) {
	desc, err := decodeDescription(shop.TaskJSON(), "spec.description")
	if err != nil {
		t.Fatal(err)
	}
	tk := &evalv1.Task{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	st := taskStatusFor(tk, &resolvedTask{Desc: desc}, nil)
	c := meta.FindStatusCondition(st.Conditions, evalv1.TaskValid)
	if st.ObservedGeneration != 3 || st.TaskID != "shop_orders_02" || st.Category != "tool_use" ||
		st.AgentTools != 4 || st.UserTools != 0 || st.GoldenActions != 2 {
		t.Errorf("status = %+v", st)
	}
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != evalv1.ReasonTaskValid ||
		c.Message != `task "shop_orders_02": 4 agent tools, 0 user tools, 2 golden actions` || c.ObservedGeneration != 3 {
		t.Errorf("Valid = %+v", c)
	}

	// Invalid later: the counts go, the condition says why.
	tk.Status = st
	tk.Generation = 4
	bad := taskStatusFor(tk, nil, &taskError{Reason: evalv1.ReasonInvalidDescription, Err: errors.New("spec.description.x: unknown key")})
	c = meta.FindStatusCondition(bad.Conditions, evalv1.TaskValid)
	if bad.TaskID != "" || bad.AgentTools != 0 || bad.ObservedGeneration != 4 {
		t.Errorf("status = %+v", bad)
	}
	if c.Status != metav1.ConditionFalse || c.Reason != evalv1.ReasonInvalidDescription || c.Message != "spec.description.x: unknown key" {
		t.Errorf("Valid = %+v", c)
	}
	if len(tk.Status.Conditions) != 1 || tk.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Error("TaskStatusFor changed the Task it was given")
	}
}

// TestTaskValidRefusesUngradableGrading: the shapes that would register, let the agent
// spend its budget and then fail grading are refused at admission, through the same
// validation RegisterTrial and pack validate run: Valid=False, InvalidDescription, the
// message naming the key.
func TestTaskValidRefusesUngradableGrading(t *testing.T) {
	for _, c := range []struct {
		name, grading, want string
	}{
		{
			name:    "hash_enabled with no source",
			grading: `{"weights":{"state_checks":1},"state_checks":{"hash_enabled":true}}`,
			want: "spec.description.grading.state_checks.hash_enabled: true, but neither golden_actions nor expected_hash is declared, " +
				"so the hash has no source to compare the trial's state against; declare golden_actions (the reference solution, replayed at grade time) " +
				"or expected_hash (the digest of the golden stable state), or set hash_enabled: false",
		},
		{
			name: "hash and jsonpaths with no hash_weight",
			grading: `{"weights":{"state_checks":1},"state_checks":{"hash_enabled":true,"golden_actions":[{"tool_name":"place_order"}],
				"jsonpaths":[{"path":"$.db.orders[0].status","equals":"paid"}]}}`,
			want: "spec.description.grading.state_checks.hash_weight: required when hash_enabled is true and jsonpaths is not empty: " +
				"the hash verdict and the JSONPath score are both real and nothing says how to fold them, so every trial would fail grading after " +
				"the agent's budget is spent; declare state_checks.hash_weight in [0, 1] (the hash verdict's share)",
		},
		{
			name: "a rubric whose criteria weights are all 0",
			grading: `{"weights":{"llm_judge":1},"llm_judge":{"model_ref":"judge","rubric":{"criteria":[
				{"id":"a","description":"polite","weight":0},{"id":"b","description":"accurate","weight":0}]}}}`,
			want: "spec.description.grading.llm_judge.rubric.criteria: every criterion's weight is 0, so the rubric's weighted mean " +
				"has no share to divide by and the judge would error on every trial after the agent's budget is spent; give at least one criterion a positive weight",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(shop.TaskJSON(), &doc); err != nil {
				t.Fatal(err)
			}
			doc["grading"] = json.RawMessage(c.grading)
			raw, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = decodeDescription(raw, "spec.description")
			var te *taskError
			if !errors.As(err, &te) {
				t.Fatalf("DecodeDescription = %v, want a *TaskError", err)
			}
			st := taskStatusFor(&evalv1.Task{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, nil, te)
			cond := meta.FindStatusCondition(st.Conditions, evalv1.TaskValid)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != evalv1.ReasonInvalidDescription || cond.Message != c.want {
				t.Errorf("Valid = %+v\nwant False %s %s", cond, evalv1.ReasonInvalidDescription, c.want)
			}
		})
	}
}
