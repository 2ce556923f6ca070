package campaign_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/campaign/report"
)

// A label selector picks Tasks, and a Task labelled later joins the run.
func TestCampaignSelectsTasksByLabel(t *testing.T) {
	s := envStack(t)
	ns := s.namespace(t)
	other := shopTask(t, ns, "other", "o")
	other.Labels = map[string]string{"suite": "elsewhere"}
	create(t, s, shopTask(t, ns, "shop-a", "a"), other)
	c := newCampaign(ns, "sel", 1, 4, nil, oracleAgent("oracle"))
	c.Spec.Tasks = evalv1.CampaignTasks{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"suite": "shop"}}}
	create(t, s, c)
	key := client.ObjectKeyFromObject(c)
	c = completed(t, s, key, evalv1.ReasonFinished)
	if c.Status.TaskCount != 1 || c.Status.Counts.Passed != 1 {
		t.Fatalf("status %+v", c.Status.Counts)
	}
	create(t, s, shopTask(t, ns, "shop-b", "b"))
	eventually(t, waitLong, func() error {
		cur := getCampaign(t, s, key)
		if cur.Status.TaskCount != 2 || cur.Status.Counts.Passed != 2 {
			return fmt.Errorf("tasks %d, counts %+v", cur.Status.TaskCount, cur.Status.Counts)
		}
		return nil
	})
	for _, tr := range trialsOf(t, s, ns, "sel") {
		if tr.Spec.TaskRef.Name == "other" {
			t.Fatalf("trial %s runs an unselected task", tr.Name)
		}
	}
}

// A listed Task that does not exist holds completion and is named; its
// Trials start once it is created.
func TestCampaignWaitsForMissingTask(t *testing.T) {
	s := envStack(t)
	ns := s.namespace(t)
	create(t, s, shopTask(t, ns, "shop-a", "a"))
	c := newCampaign(ns, "wait", 1, 4, []string{"shop-a", "later"}, oracleAgent("oracle"))
	create(t, s, c)
	key := client.ObjectKeyFromObject(c)
	eventually(t, waitLong, func() error {
		cur := getCampaign(t, s, key)
		r := meta.FindStatusCondition(cur.Status.Conditions, evalv1.CampaignTasksResolved)
		if r == nil || r.Status != metav1.ConditionFalse || r.Reason != evalv1.ReasonTaskNotFound ||
			r.Message != "Task later not found in namespace "+ns+"; its Trials are created once it exists" {
			return fmt.Errorf("TasksResolved %+v", r)
		}
		if cur.Status.Counts.Passed != 1 {
			return fmt.Errorf("counts %+v", cur.Status.Counts)
		}
		if done := meta.FindStatusCondition(cur.Status.Conditions, evalv1.CampaignCompleted); done == nil || done.Status != metav1.ConditionFalse {
			return fmt.Errorf("completed while a task is missing: %+v", done)
		}
		return nil
	})
	create(t, s, shopTask(t, ns, "later", "l"))
	c = completed(t, s, key, evalv1.ReasonFinished)
	if c.Status.Counts.Passed != 2 || c.Status.Counts.Total != 2 {
		t.Fatalf("counts %+v", c.Status.Counts)
	}
}

// `tolokaforge report CAMPAIGN --kubeconfig ... --html` against the API
// server writes the page and an aggregate.json that count each Trial once.
func TestReportCommandAgainstCluster(t *testing.T) {
	s := envStack(t)
	ns := s.namespace(t)
	create(t, s, shopTask(t, ns, "shop", "ok"))
	c := newCampaign(ns, "rep", 3, 3, []string{"shop"}, llmAgent(s, "llm"))
	create(t, s, c)
	completed(t, s, client.ObjectKeyFromObject(c), evalv1.ReasonFinished)

	user, err := s.env.AddUser(envtest.User{Name: "report-reader", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "out", "report.html")
	if err := os.MkdirAll(filepath.Dir(html), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := report.Main(context.Background(), []string{"rep", "--kubeconfig", kcPath, "--namespace", ns, "--html", html}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "out", "aggregate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var agg map[string]any
	if err := json.Unmarshal(raw, &agg); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{
		"total_trials": 3, "measured_trials": 3, "successful_trials": 3, "total_cost_usd": 3 * usdPerTrial,
		"total_tokens": 3 * tokensPerTrial, "pass_hat@3_macro": 1, "k": 3,
	} {
		if got, _ := agg[k].(float64); got != want {
			t.Errorf("aggregate %s = %v, want %v", k, agg[k], want)
		}
	}
	if err := report.Main(context.Background(), []string{"nope", "--kubeconfig", kcPath, "--namespace", ns}); err == nil ||
		err.Error() != `report: get campaign `+ns+`/nope: campaigns.eval.tolokaforge.io "nope" not found` {
		t.Fatalf("missing campaign: %v", err)
	}
}
