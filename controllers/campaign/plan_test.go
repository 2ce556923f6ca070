package campaign

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

var now = metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))

func campaign(k, maxParallel int32, agents ...string) *evalv1.Campaign {
	c := &evalv1.Campaign{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "cuid", Generation: 1},
		Spec:       evalv1.CampaignSpec{TrialsPerTask: k, MaxParallel: maxParallel},
	}
	for _, a := range agents {
		c.Spec.Agents = append(c.Spec.Agents, evalv1.NamedAgent{Name: a, Model: evalv1.ModelSpec{Provider: evalv1.ProviderOracle}})
	}
	return c
}

// tv is a Trial of cell (agent, task, index) in phase p, created at gen 1.
func tv(agent, task string, index int32, p evalv1.TrialPhase) trialView {
	name := TrialName("c", agent, task, index)
	v := trialView{
		Name: name, UID: types.UID("uid-" + name), Ours: true,
		Cell: Cell{Agent: agent, Task: task, Index: index}, CreatedGeneration: 1,
		Phase: p, Terminal: IsTerminalPhase(p),
		Outcome: Outcome{Agent: agent, Task: task, Phase: p},
	}
	if p == evalv1.PhasePassed {
		v.Outcome.Score = ptr.To(1.0)
	}
	return v
}

func withCost(v trialView, usd float64, tokens int64) trialView {
	v.Outcome.CostUSD, v.Outcome.Tokens = usd, tokens
	return v
}

func names(cs []creation) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func cond(st *evalv1.CampaignStatus, typ string) *metav1.Condition {
	return meta.FindStatusCondition(st.Conditions, typ)
}

func wantCond(t *testing.T, st *evalv1.CampaignStatus, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := cond(st, typ)
	if c == nil {
		t.Fatalf("condition %s missing", typ)
	}
	if c.Status != status || c.Reason != reason {
		t.Fatalf("condition %s = %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
}

func TestPlanCreatesUpToMaxParallelInIndexMajorOrder(t *testing.T) {
	w := &World{Campaign: campaign(2, 3, "a1", "a2"), Tasks: []string{"t1", "t2"}, Now: now}
	p := w.Plan()
	want := []string{"c-a1-t1-0", "c-a2-t1-0", "c-a1-t2-0"}
	if got := names(p.Creates); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("creates %v, want %v", got, want)
	}
	c := p.Status.Counts
	if c.Total != 8 || c.Pending != 3 || c.Queued != 5 || c.Running != 0 {
		t.Fatalf("counts %+v", c)
	}
	if p.Status.Progress != "0/8" || p.Status.AgentCount != 2 || p.Status.TaskCount != 2 || p.Status.K != 2 {
		t.Fatalf("display %q %d %d k=%d", p.Status.Progress, p.Status.AgentCount, p.Status.TaskCount, p.Status.K)
	}
	if p.HeldByParallel != 5 || p.HeldByBudget != 0 {
		t.Fatalf("held %d/%d", p.HeldByParallel, p.HeldByBudget)
	}
	wantCond(t, &p.Status, evalv1.CampaignProgressing, metav1.ConditionTrue, evalv1.ReasonRunning)
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionFalse, evalv1.ReasonRunning)
	wantCond(t, &p.Status, evalv1.CampaignTasksResolved, metav1.ConditionTrue, evalv1.ReasonResolved)
	wantCond(t, &p.Status, evalv1.CampaignBudgetExceeded, metav1.ConditionFalse, evalv1.ReasonNoBudget)
}

// In-flight creations count as running and as existing: planning again
// before the cache shows them creates nothing more.
func TestPlanIsIdempotentWithInFlightCreations(t *testing.T) {
	w := &World{Campaign: campaign(2, 3, "a1", "a2"), Tasks: []string{"t1", "t2"}, Now: now}
	first := w.Plan()
	for _, cr := range first.Creates {
		w.InFlight = append(w.InFlight, inFlight(cr))
	}
	again := w.Plan()
	if len(again.Creates) != 0 {
		t.Fatalf("second plan creates %v", names(again.Creates))
	}
	if again.Status.Counts.Pending != 3 || again.Status.Counts.Queued != 5 {
		t.Fatalf("counts %+v", again.Status.Counts)
	}
	// One in-flight creation observed as Running, one finished: one slot.
	w.InFlight = w.InFlight[2:]
	w.Trials = []trialView{tv("a1", "t1", 0, evalv1.PhaseRunning), tv("a2", "t1", 0, evalv1.PhasePassed)}
	p := w.Plan()
	if got := names(p.Creates); len(got) != 1 || got[0] != "c-a2-t2-0" {
		t.Fatalf("creates %v, want [c-a2-t2-0]", got)
	}
}

func TestPlanNeverExceedsMaxParallelCountingAllNonTerminal(t *testing.T) {
	c := campaign(3, 2, "a")
	w := &World{Campaign: c, Tasks: []string{"t"}, Now: now, Trials: []trialView{
		tv("a", "t", 0, evalv1.PhaseRunning),
		tv("a", "t", 1, ""), // created, no phase yet
	}}
	if p := w.Plan(); len(p.Creates) != 0 || p.HeldByParallel != 1 {
		t.Fatalf("creates %v held %d", names(p.Creates), p.HeldByParallel)
	}
	// A Trial of an agent no longer in the spec still holds a slot.
	w.Trials = []trialView{tv("gone", "t", 0, evalv1.PhaseRunning), tv("a", "t", 0, evalv1.PhasePassed)}
	p := w.Plan()
	if got := names(p.Creates); len(got) != 1 || got[0] != "c-a-t-1" {
		t.Fatalf("creates %v", got)
	}
	if p.Status.Counts.Running != 0 || p.Status.Counts.Passed != 1 || p.Status.Overall.Trials != 1 {
		t.Fatalf("out-of-plan Trial leaked into status: %+v", p.Status.Counts)
	}
}

func TestPlanEditsAddOnlyWhatIsNew(t *testing.T) {
	c := campaign(2, 100, "a")
	trials := []trialView{tv("a", "t1", 0, evalv1.PhasePassed), tv("a", "t1", 1, evalv1.PhasePassed)}
	c.Spec.TrialsPerTask = 3
	p := (&World{Campaign: c, Tasks: []string{"t1", "t2"}, Trials: trials, Now: now}).Plan()
	want := "c-a-t2-0,c-a-t2-1,c-a-t1-2,c-a-t2-2"
	if got := strings.Join(names(p.Creates), ","); got != want {
		t.Fatalf("creates %s, want %s", got, want)
	}
	// A deleted Trial (not retired) is simply missing and re-created.
	p = (&World{Campaign: campaign(2, 100, "a"), Tasks: []string{"t1"}, Trials: trials[1:], Now: now}).Plan()
	if got := names(p.Creates); len(got) != 1 || got[0] != "c-a-t1-0" {
		t.Fatalf("creates %v", got)
	}
}

func TestPlanCollidingNamesAreHashed(t *testing.T) {
	c := campaign(1, 10, "a", "a-b")
	p := (&World{Campaign: c, Tasks: []string{"b-c", "c"}, Now: now}).Plan()
	seen := map[string]bool{}
	for _, cr := range p.Creates {
		if seen[cr.Name] {
			t.Fatalf("duplicate name %q in %v", cr.Name, names(p.Creates))
		}
		seen[cr.Name] = true
	}
	// (a, b-c) and (a-b, c) both read "c-a-b-c-0": both are hashed.
	hashed := 0
	for n := range seen {
		if strings.HasPrefix(n, "c-a-b-c-") && len(n) == len("c-a-b-c-")+hashLen+2 {
			hashed++
		}
	}
	if len(seen) != 4 || !seen["c-a-c-0"] || !seen["c-a-b-b-c-0"] || seen["c-a-b-c-0"] || hashed != 2 {
		t.Fatalf("names %v", names(p.Creates))
	}
}
