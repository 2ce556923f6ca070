package campaign_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigyaml "sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/task/pack"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/campaign"
	"tolokaforge.io/operator/controllers/campaign/report"
)

// 3 tasks x 4 trials x 2 agents: the oracle passes everything; the scripted
// LLM passes shop-a and shop-b and fails shop-c every time.
func TestCampaignThreeTasksFourTrialsTwoAgents(t *testing.T) {
	s := envStack(t)
	ns := s.namespace(t)
	create(t, s, shopTask(t, ns, "shop-a", "a"), shopTask(t, ns, "shop-b", "b"), shopTask(t, ns, "shop-c", "fail"))
	w := watchParallel(t, s, ns)
	c := newCampaign(ns, "eval", 4, 5, []string{"shop-a", "shop-b", "shop-c"}, oracleAgent("oracle"), llmAgent(s, "llm"))
	create(t, s, c)
	key := client.ObjectKeyFromObject(c)
	c = completed(t, s, key, evalv1.ReasonFinished)
	peak, seen := w.stop(t)

	st := c.Status
	want := evalv1.TrialCounts{Total: 24, Passed: 20, Failed: 4}
	if st.Counts != want {
		t.Fatalf("counts %+v, want %+v", st.Counts, want)
	}
	if st.Progress != "24/24" || st.AgentCount != 2 || st.TaskCount != 3 || st.K != 4 {
		t.Fatalf("display %q agents %d tasks %d k %d", st.Progress, st.AgentCount, st.TaskCount, st.K)
	}
	if peak > 5 || peak < 1 || seen != 24 {
		t.Fatalf("the watcher saw %d Trials, at most %d non-terminal at once (maxParallel 5)", seen, peak)
	}
	t.Logf("peak non-terminal Trials: %d of maxParallel 5", peak)

	// By hand: six cells of n=4. The oracle's three and the LLM's shop-a and
	// shop-b have c=4 (pass@1 = pass^4 = 1); the LLM's shop-c has c=0.
	o := st.Overall
	if o.Trials != 24 || o.Passes != 20 || o.KCells != 6 || o.Tokens != 12*tokensPerTrial {
		t.Fatalf("overall %+v", o)
	}
	near(t, "overall pass@1 = 5/6", o.PassAt1, 5.0/6)
	near(t, "overall pass^4 = 5/6", o.PassHatK, 5.0/6)
	near(t, "overall pass@4 = 5/6", o.PassAtK, 5.0/6)
	if o.CostUSD != 12*usdPerTrial || st.Spent.CostUSD != 12*usdPerTrial || st.Spent.Tokens != 12*tokensPerTrial {
		t.Fatalf("cost %v spent %+v", o.CostUSD, st.Spent)
	}
	or, llm := keyed(t, st.PerAgent, "oracle"), keyed(t, st.PerAgent, "llm")
	near(t, "oracle pass@1", or.PassAt1, 1)
	near(t, "oracle pass^4", or.PassHatK, 1)
	if or.Trials != 12 || or.Passes != 12 || or.Tokens != 0 || or.CostUSD != 0 {
		t.Fatalf("oracle %+v", or)
	}
	near(t, "llm pass@1 = 2/3", llm.PassAt1, 2.0/3)
	near(t, "llm pass^4 = 2/3", llm.PassHatK, 2.0/3)
	near(t, "llm pass@4 = 2/3", llm.PassAtK, 2.0/3)
	if llm.Trials != 12 || llm.Passes != 8 || llm.Tokens != 12*tokensPerTrial || llm.CostUSD != 12*usdPerTrial {
		t.Fatalf("llm %+v", llm)
	}
	sc := keyed(t, st.PerTask, "shop-c")
	near(t, "shop-c pass@1 = (1+0)/2", sc.PassAt1, 0.5)
	near(t, "shop-c pass^4 = (1+0)/2", sc.PassHatK, 0.5)
	if sc.Trials != 8 || sc.Passes != 4 {
		t.Fatalf("shop-c %+v", sc)
	}
	sa := keyed(t, st.PerTask, "shop-a")
	near(t, "shop-a pass^4", sa.PassHatK, 1)

	// Exactly one Trial per cell, named deterministically. A Trial the
	// infrastructure made retry still counts once above.
	trials := trialsOf(t, s, ns, "eval")
	var names []string
	retried := 0
	for _, tr := range trials {
		names = append(names, tr.Name)
		if len(tr.Status.Attempts) < 1 || int(tr.Status.AttemptCount) != len(tr.Status.Attempts) {
			t.Errorf("trial %s: %d attempts, attemptCount %d", tr.Name, len(tr.Status.Attempts), tr.Status.AttemptCount)
		}
		if len(tr.Status.Attempts) > 1 {
			retried++
		}
		if tr.Labels[evalv1.LabelCampaign] != "eval" || tr.Annotations[evalv1.AnnotationCampaignGeneration] != "1" {
			t.Errorf("trial %s labels %v annotations %v", tr.Name, tr.Labels, tr.Annotations)
		}
		if ref := metav1.GetControllerOf(&tr); ref == nil || ref.UID != c.UID {
			t.Errorf("trial %s is not controlled by the campaign", tr.Name)
		}
	}
	var wantNames []string
	for _, a := range []string{"oracle", "llm"} {
		for _, task := range []string{"shop-a", "shop-b", "shop-c"} {
			for i := 0; i < 4; i++ {
				wantNames = append(wantNames, fmt.Sprintf("eval-%s-%s-%d", a, task, i))
			}
		}
	}
	t.Logf("%d of 24 trials needed more than one attempt", retried)
	sort.Strings(names)
	sort.Strings(wantNames)
	if strings.Join(names, ",") != strings.Join(wantNames, ",") {
		t.Fatalf("trials\n%v\nwant\n%v", names, wantNames)
	}
	for _, tr := range trials {
		wantPhase := evalv1.PhasePassed
		if tr.Labels[evalv1.LabelAgent] == "llm" && tr.Spec.TaskRef.Name == "shop-c" {
			wantPhase = evalv1.PhaseFailed
		}
		if tr.Status.Phase != wantPhase {
			t.Errorf("trial %s phase %s, want %s", tr.Name, tr.Status.Phase, wantPhase)
		}
	}
	cond := meta.FindStatusCondition(st.Conditions, evalv1.CampaignProgressing)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != evalv1.ReasonFinished {
		t.Fatalf("Progressing %+v", cond)
	}

	// The report reads the same Trials and agrees.
	rep, err := report.FromCampaign(bg, s.client, ns, "eval")
	if err != nil {
		t.Fatal(err)
	}
	rows := rep.Rows()
	if len(rows) != 6 || rep.K != 4 {
		t.Fatalf("report: %d rows, k=%d", len(rows), rep.K)
	}
	for _, r := range rows {
		failing := r.Agent == "llm" && r.Task == "shop-c"
		if r.N != 4 || (r.C == 0) != failing || *r.PassHat != map[bool]float64{true: 0, false: 1}[failing] {
			t.Fatalf("report row %+v", r)
		}
		if failing && (len(r.Failures) != 1 || r.Failures[0].Count != 4 || !strings.HasPrefix(r.Failures[0].Reason, "hash mismatch (customers: 0 added, 0 removed, 1 modified;")) {
			t.Fatalf("report failures of llm/shop-c: %+v", r.Failures)
		}
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "llm     12  8       0.667   0.667   0.667") {
		t.Fatalf("report table:\n%s", table.String())
	}
}

// At $0.50 a trial and one at a time, a $1.25 budget lets the first three
// start (spent 0, 0.5, 1.0 < 1.25) and stops the fourth (1.5).
func TestCampaignBudgetStopsCreation(t *testing.T) {
	s := envStack(t)
	ns := s.namespace(t)
	create(t, s, shopTask(t, ns, "shop", "ok"))
	w := watchParallel(t, s, ns)
	c := newCampaign(ns, "budget", 6, 1, []string{"shop"}, llmAgent(s, "llm"))
	c.Spec.Budget = &evalv1.Budget{MaxUSD: ptr.To(1.25)}
	create(t, s, c)
	c = completed(t, s, client.ObjectKeyFromObject(c), evalv1.ReasonBudgetExceeded)
	peak, seen := w.stop(t)

	st := c.Status
	if want := (evalv1.TrialCounts{Total: 6, Queued: 3, Passed: 3}); st.Counts != want {
		t.Fatalf("counts %+v, want %+v", st.Counts, want)
	}
	if st.Spent.CostUSD != 1.5 || st.Spent.Tokens != 3*tokensPerTrial || st.Progress != "3/6" {
		t.Fatalf("spent %+v progress %s", st.Spent, st.Progress)
	}
	be := meta.FindStatusCondition(st.Conditions, evalv1.CampaignBudgetExceeded)
	if be == nil || be.Status != metav1.ConditionTrue || be.Message != "spent $1.5000 of $1.2500: no more Trials are created, running Trials finish" {
		t.Fatalf("BudgetExceeded %+v", be)
	}
	trials := trialsOf(t, s, ns, "budget")
	var idx []int32
	for _, tr := range trials {
		idx = append(idx, tr.Spec.TrialIndex)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	if fmt.Sprint(idx) != "[0 1 2]" || seen != 3 || peak != 1 {
		t.Fatalf("trial indexes %v, seen %d, peak %d", idx, seen, peak)
	}
	// n=3 < k=6: pass^6 cannot be estimated.
	if st.Overall.PassHatK != nil || st.Overall.KCells != 0 {
		t.Fatalf("overall %+v", st.Overall)
	}
}

// Two of four oracle trials lose their runner pod mid-trial with one
// attempt allowed: they end InfraFailed. spec.rerun [InfraFailed] deletes
// and re-creates exactly those two; every count stays one per Trial.
func TestCampaignRerunAfterPodLoss(t *testing.T) {
	s := envStack(t)
	ns := s.namespace(t)
	create(t, s, shopTask(t, ns, "shop", "ok"))
	c := newCampaign(ns, "rerun", 4, 4, []string{"shop"}, oracleAgent("oracle"))
	c.Spec.RetryPolicy = evalv1.RetryPolicy{MaxAttempts: 1}
	lost := []string{campaign.TrialName("rerun", "oracle", "shop", 1), campaign.TrialName("rerun", "oracle", "shop", 3)}
	var gs []*gate
	for _, name := range lost {
		gs = append(gs, s.gates.hold(ns, name))
	}
	create(t, s, c)
	key := client.ObjectKeyFromObject(c)
	for i, g := range gs {
		select {
		case <-g.reached:
		case <-time.After(waitLong):
			t.Fatalf("trial %s never reached its agent", lost[i])
		}
		if err := s.sim.Kill(ns, controllers.PodName(lost[i], 1, evalv1.RoleRunner)); err != nil {
			t.Fatal(err)
		}
		close(g.release)
	}
	c = completed(t, s, key, evalv1.ReasonFinished)
	if want := (evalv1.TrialCounts{Total: 4, Passed: 2, InfraFailed: 2}); c.Status.Counts != want {
		t.Fatalf("before rerun: counts %+v, want %+v", c.Status.Counts, want)
	}
	if c.Status.Overall.Trials != 2 || c.Status.Overall.PassHatK != nil {
		t.Fatalf("infra failures entered the estimators: %+v", c.Status.Overall)
	}
	before := map[string]types.UID{}
	for _, tr := range trialsOf(t, s, ns, "rerun") {
		before[tr.Name] = tr.UID
	}

	eventually(t, waitLong, func() error {
		cur := getCampaign(t, s, key)
		cur.Spec.Rerun = []evalv1.TrialPhase{evalv1.PhaseInfraFailed}
		return s.client.Update(bg, cur)
	})
	c = completed(t, s, key, evalv1.ReasonFinished)
	st := c.Status
	if want := (evalv1.TrialCounts{Total: 4, Passed: 4}); st.Counts != want {
		t.Fatalf("after rerun: counts %+v, want %+v", st.Counts, want)
	}
	if st.Rerun == nil || st.Rerun.Generation != 2 || st.Rerun.Retired != 2 || len(st.Rerun.Deleting) != 0 {
		t.Fatalf("rerun status %+v", st.Rerun)
	}
	if st.Overall.Trials != 4 || st.Overall.Passes != 4 || st.Overall.KCells != 1 {
		t.Fatalf("overall %+v", st.Overall)
	}
	near(t, "pass^4 after rerun", st.Overall.PassHatK, 1)
	trials := trialsOf(t, s, ns, "rerun")
	if len(trials) != 4 {
		t.Fatalf("%d trials after the rerun", len(trials))
	}
	for _, tr := range trials {
		wasLost := tr.Name == lost[0] || tr.Name == lost[1]
		if (tr.UID != before[tr.Name]) != wasLost {
			t.Errorf("trial %s: re-created=%v, lost=%v", tr.Name, tr.UID != before[tr.Name], wasLost)
		}
		if len(tr.Status.Attempts) != 1 || tr.Status.Phase != evalv1.PhasePassed {
			t.Errorf("trial %s: %d attempts, phase %s", tr.Name, len(tr.Status.Attempts), tr.Status.Phase)
		}
		if wasLost && tr.Annotations[evalv1.AnnotationCampaignGeneration] != "2" {
			t.Errorf("re-created trial %s annotated %v", tr.Name, tr.Annotations)
		}
	}
}

// Raising k and adding a task adds only the new cells; a deleted Trial comes
// back, once.
func TestCampaignEditAddsOnlyWhatIsNew(t *testing.T) {
	s := envStack(t)
	ns := s.namespace(t)
	create(t, s, shopTask(t, ns, "shop-a", "a"), shopTask(t, ns, "shop-b", "b"))
	c := newCampaign(ns, "grow", 2, 10, []string{"shop-a"}, oracleAgent("oracle"))
	create(t, s, c)
	key := client.ObjectKeyFromObject(c)
	completed(t, s, key, evalv1.ReasonFinished)
	first := map[string]types.UID{}
	for _, tr := range trialsOf(t, s, ns, "grow") {
		first[tr.Name] = tr.UID
	}
	if len(first) != 2 {
		t.Fatalf("%d trials", len(first))
	}
	eventually(t, waitLong, func() error {
		cur := getCampaign(t, s, key)
		cur.Spec.TrialsPerTask = 3
		cur.Spec.Tasks.Names = []string{"shop-a", "shop-b"}
		return s.client.Update(bg, cur)
	})
	c = completed(t, s, key, evalv1.ReasonFinished)
	if want := (evalv1.TrialCounts{Total: 6, Passed: 6}); c.Status.Counts != want || c.Status.Progress != "6/6" {
		t.Fatalf("counts %+v progress %s", c.Status.Counts, c.Status.Progress)
	}
	trials := trialsOf(t, s, ns, "grow")
	kept := 0
	for _, tr := range trials {
		if uid, ok := first[tr.Name]; ok {
			if uid != tr.UID {
				t.Errorf("trial %s was re-created by the edit", tr.Name)
			}
			kept++
		} else if tr.Annotations[evalv1.AnnotationCampaignGeneration] != "2" {
			t.Errorf("new trial %s annotated %v", tr.Name, tr.Annotations)
		}
	}
	if len(trials) != 6 || kept != 2 {
		t.Fatalf("%d trials, %d kept", len(trials), kept)
	}

	// A Trial deleted by hand is missing from the plan and comes back.
	victim := campaign.TrialName("grow", "oracle", "shop-b", 1)
	old := &evalv1.Trial{}
	if err := s.client.Get(bg, types.NamespacedName{Namespace: ns, Name: victim}, old); err != nil {
		t.Fatal(err)
	}
	if err := s.client.Delete(bg, old); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() error {
		tr := &evalv1.Trial{}
		if err := s.client.Get(bg, types.NamespacedName{Namespace: ns, Name: victim}, tr); err != nil {
			return err
		}
		if tr.UID == old.UID || tr.Status.Phase != evalv1.PhasePassed {
			return fmt.Errorf("not re-created and passed yet (uid %s phase %s)", tr.UID, tr.Status.Phase)
		}
		return nil
	})
	c = completed(t, s, key, evalv1.ReasonFinished)
	if c.Status.Counts.Total != 6 || c.Status.Counts.Passed != 6 || len(trialsOf(t, s, ns, "grow")) != 6 {
		t.Fatalf("after re-creation: %+v", c.Status.Counts)
	}
}

// pack import's stream applies as is, and a Campaign over the imported Task
// runs on the Go shop server.
func TestImportedPackAppliesAndRuns(t *testing.T) {
	s := envStack(t)
	ns := s.namespace(t)
	conv, err := pack.Convert("../../../shared/fixtures/tolokaforge/shop_orders_02", pack.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	m, err := pack.Build(conv, pack.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	if err := pack.WriteStream(&stream, []*pack.Manifests{m}); err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(stream.String(), "\n---\n") {
		js, err := sigyaml.YAMLToJSON([]byte(doc)) // what kubectl does
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatal(err)
		}
		if err := s.client.Create(bg, u); err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	eventually(t, waitLong, func() error {
		tk := &evalv1.Task{}
		if err := s.client.Get(bg, types.NamespacedName{Namespace: ns, Name: "shop-orders-02"}, tk); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(tk.Status.Conditions, "Valid"); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("task not valid yet: %+v", c)
		}
		if tk.Status.TaskID != "shop_orders_02" || tk.Status.GoldenActions != 2 || tk.Status.AgentTools != 4 {
			return fmt.Errorf("task status %+v", tk.Status)
		}
		return nil
	})
	c := newCampaign(ns, "imported", 2, 2, []string{"shop-orders-02"}, oracleAgent("oracle"))
	create(t, s, c)
	c = completed(t, s, client.ObjectKeyFromObject(c), evalv1.ReasonFinished)
	if want := (evalv1.TrialCounts{Total: 2, Passed: 2}); c.Status.Counts != want {
		t.Fatalf("counts %+v", c.Status.Counts)
	}
	for _, tr := range trialsOf(t, s, ns, "imported") {
		g := tr.Status.Grade
		if g == nil || g.Components.StateChecks == nil || *g.Components.StateChecks != 1 || !strings.HasPrefix(g.Reasons, "State: hash match") {
			t.Fatalf("trial %s grade %+v", tr.Name, g)
		}
	}
}

// The API server keeps custom resources as untyped JSON and writes a float
// with an integral value back as an integer: the reason pack import moves
// such initial states into a ConfigMap's data, which it keeps verbatim.
func TestAPIServerDropsIntegralFloatLiterals(t *testing.T) {
	s := envStack(t)
	ns := s.namespace(t)
	tk := shopTask(t, ns, "literal", "x")
	sent := string(tk.Spec.Description.Raw)
	create(t, s, tk)
	got := &evalv1.Task{}
	if err := s.client.Get(bg, client.ObjectKeyFromObject(tk), got); err != nil {
		t.Fatal(err)
	}
	var d struct {
		InitialState struct {
			Tables struct {
				Customers []json.RawMessage `json:"customers"`
			} `json:"tables"`
		} `json:"initial_state"`
	}
	if err := json.Unmarshal(got.Spec.Description.Raw, &d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sent, `"balance":300.0`) {
		t.Fatal("the fixture changed: no 300.0 literal sent")
	}
	if c := string(d.InitialState.Tables.Customers[0]); !strings.Contains(c, `"balance":300}`) && !strings.Contains(c, `"balance":300,`) {
		t.Fatalf("the API server kept the literal (%s): the importer's ConfigMap rule for integral floats is unnecessary", c)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lit"}, Data: map[string]string{"t": `{"a":300.0}`}}
	create(t, s, cm)
	back := &corev1.ConfigMap{}
	if err := s.client.Get(bg, client.ObjectKeyFromObject(cm), back); err != nil || back.Data["t"] != `{"a":300.0}` {
		t.Fatalf("configmap data %q %v", back.Data["t"], err)
	}
}
