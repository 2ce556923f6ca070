package controllers

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/examples/shop"
)

func TestTaskStatusFor(t *testing.T) {
	desc, err := DecodeDescription(shop.TaskJSON(), "spec.description")
	if err != nil {
		t.Fatal(err)
	}
	tk := &evalv1.Task{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	st := TaskStatusFor(tk, &ResolvedTask{Desc: desc}, nil)
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
	bad := TaskStatusFor(tk, nil, &TaskError{Reason: evalv1.ReasonInvalidDescription, Err: errors.New("spec.description.x: unknown key")})
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
