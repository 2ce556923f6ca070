package campaign

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// spec.suspend holds back every Trial not created yet; created ones run on;
// false resumes, and the condition says which.
func TestPlanSuspendAndResume(t *testing.T) {
	c := campaign(2, 10, "a")
	c.Spec.Suspend = ptr.To(true)
	w := &World{Campaign: c, Tasks: []string{"t", "u"}, Now: now, Trials: []trialView{tv("a", "t", 0, evalv1.PhaseRunning)}}
	p := w.Plan()
	if len(p.Creates) != 0 {
		t.Fatalf("suspended campaign creates %v", names(p.Creates))
	}
	wantCond(t, &p.Status, evalv1.CampaignSuspended, metav1.ConditionTrue, evalv1.ReasonSuspended)
	if got := cond(&p.Status, evalv1.CampaignSuspended).Message; got != "spec.suspend is true: no Trial is created; those created and not finished run to their end" {
		t.Fatalf("Suspended message %q", got)
	}
	if got := cond(&p.Status, evalv1.CampaignProgressing).Message; !strings.Contains(got, "(suspended: 3 not created)") {
		t.Fatalf("Progressing message %q does not count the held Trials", got)
	}
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionFalse, evalv1.ReasonSuspended)
	wantCond(t, &p.Status, evalv1.CampaignProgressing, metav1.ConditionTrue, evalv1.ReasonSuspended)
	if got := p.Status.Counts; got.Queued != 3 || got.Running != 1 {
		t.Fatalf("counts %+v", got)
	}

	// The running Trial finishes: nothing runs, nothing is created, and the
	// campaign is not complete.
	c.Status = p.Status
	w.Trials = []trialView{tv("a", "t", 0, evalv1.PhasePassed)}
	p = w.Plan()
	if len(p.Creates) != 0 {
		t.Fatalf("suspended campaign creates %v", names(p.Creates))
	}
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionFalse, evalv1.ReasonSuspended)
	wantCond(t, &p.Status, evalv1.CampaignProgressing, metav1.ConditionFalse, evalv1.ReasonSuspended)

	// Resumed: the held Trials are created, the condition turns False.
	c.Status = p.Status
	c.Spec.Suspend = ptr.To(false)
	p = w.Plan()
	if len(p.Creates) != 3 {
		t.Fatalf("resumed campaign creates %v, want 3", names(p.Creates))
	}
	wantCond(t, &p.Status, evalv1.CampaignSuspended, metav1.ConditionFalse, evalv1.ReasonResumed)
	wantCond(t, &p.Status, evalv1.CampaignProgressing, metav1.ConditionTrue, evalv1.ReasonRunning)

	// Never suspended: no Suspended condition at all, as on a Job.
	p = (&World{Campaign: campaign(1, 10, "a"), Tasks: []string{"t"}, Now: now}).Plan()
	if cond(&p.Status, evalv1.CampaignSuspended) != nil || len(p.Creates) != 1 {
		t.Fatalf("never suspended: conditions %+v, creates %v", p.Status.Conditions, names(p.Creates))
	}
}

func TestPlanHoldsEverythingWhileASecretIsMissing(t *testing.T) {
	c := campaign(1, 10, "a")
	missing := "Secret ns/openai not found (spec.agents[a].model.apiKeySecretRef)"
	w := &World{Campaign: c, Tasks: []string{"t", "u"}, Now: now, MissingRef: missing, MissingRefReason: evalv1.ReasonSecretNotFound, RefsChecked: true}
	p := w.Plan()
	if len(p.Creates) != 0 {
		t.Fatalf("creates %v while the Secret is missing", names(p.Creates))
	}
	wantCond(t, &p.Status, evalv1.CampaignReferencesResolved, metav1.ConditionFalse, evalv1.ReasonSecretNotFound)
	if got := cond(&p.Status, evalv1.CampaignReferencesResolved).Message; got != missing+"; no Trial is created until it exists" {
		t.Fatalf("message %q", got)
	}
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionFalse, evalv1.ReasonSecretNotFound)
	wantCond(t, &p.Status, evalv1.CampaignProgressing, metav1.ConditionFalse, evalv1.ReasonSecretNotFound)

	c.Status = p.Status
	w.MissingRef, w.MissingRefReason, w.RefsChecked = "", "", false
	p = w.Plan()
	// Not looked up this time: the condition stands as it was.
	wantCond(t, &p.Status, evalv1.CampaignReferencesResolved, metav1.ConditionFalse, evalv1.ReasonSecretNotFound)
	w.RefsChecked = true
	p = w.Plan()
	if len(p.Creates) != 2 {
		t.Fatalf("creates %v once the Secret exists, want 2", names(p.Creates))
	}
	wantCond(t, &p.Status, evalv1.CampaignReferencesResolved, metav1.ConditionTrue, evalv1.ReasonResolved)
}

func TestExpireAt(t *testing.T) {
	done := evalv1.CampaignStatus{Conditions: []metav1.Condition{{Type: evalv1.CampaignCompleted, Status: metav1.ConditionTrue, LastTransitionTime: now}}}
	running := evalv1.CampaignStatus{Conditions: []metav1.Condition{{Type: evalv1.CampaignCompleted, Status: metav1.ConditionFalse, LastTransitionTime: now}}}
	if got := expireAt(&done, ptr.To[int32](60)); !got.Equal(now.Add(time.Minute)) {
		t.Errorf("completed, ttl 60: %v", got)
	}
	if got := expireAt(&done, nil); !got.IsZero() {
		t.Errorf("no ttl: %v", got)
	}
	if got := expireAt(&running, ptr.To[int32](0)); !got.IsZero() {
		t.Errorf("not completed: %v", got)
	}
}

// The ttl stays on the Campaign (a Trial deleted under it would be
// re-created); keepPodsAfterFinished goes down to every Trial.
func TestBuildTrialPassesKeepPodsNotTheTTL(t *testing.T) {
	c := campaign(1, 1, "a")
	c.Spec.TTLSecondsAfterFinished = ptr.To[int32](60)
	c.Spec.KeepPodsAfterFinished = true
	tr := buildTrial(c, Cell{Agent: "a", Task: "t"}, "n", c.Spec.Agents[0].Model)
	if tr.Spec.TTLSecondsAfterFinished != nil || !tr.Spec.KeepPodsAfterFinished {
		t.Fatalf("trial ttl %v keepPods %v", tr.Spec.TTLSecondsAfterFinished, tr.Spec.KeepPodsAfterFinished)
	}
}

// Kueue: the Campaign's queue and priority-class labels and its
// trialManagedBy go down to every Trial; other labels of the Campaign do not.
func TestBuildTrialPassesKueueLabelsAndManagedBy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		labels    map[string]string
		managedBy *string
		want      map[string]string
	}{
		{name: "no queue", labels: map[string]string{"team": "x"}, want: map[string]string{}},
		{name: "queue and priority", labels: map[string]string{evalv1.LabelQueueName: "lq", evalv1.LabelPriorityClass: "high", "team": "x"},
			want: map[string]string{evalv1.LabelQueueName: "lq", evalv1.LabelPriorityClass: "high"}},
		{name: "multikueue", labels: map[string]string{evalv1.LabelQueueName: "lq"}, managedBy: ptr.To(evalv1.ManagedByMultiKueue),
			want: map[string]string{evalv1.LabelQueueName: "lq"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := campaign(1, 1, "a")
			c.Labels = tc.labels
			c.Spec.TrialManagedBy = tc.managedBy
			tr := buildTrial(c, Cell{Agent: "a", Task: "t"}, "n", c.Spec.Agents[0].Model)
			got := map[string]string{}
			for _, k := range []string{evalv1.LabelQueueName, evalv1.LabelPriorityClass, "team"} {
				if v, ok := tr.Labels[k]; ok {
					got[k] = v
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("labels %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("label %s = %q, want %q", k, got[k], v)
				}
			}
			if (tr.Spec.ManagedBy == nil) != (tc.managedBy == nil) || (tc.managedBy != nil && *tr.Spec.ManagedBy != *tc.managedBy) {
				t.Errorf("managedBy %v, want %v", tr.Spec.ManagedBy, tc.managedBy)
			}
			// MultiKueue copies a Trial's owner references into the worker,
			// whose garbage collector would delete the copy: such a Trial
			// names its Campaign by label and annotation instead.
			multiKueue := tc.managedBy != nil
			if multiKueue != (len(tr.OwnerReferences) == 0) {
				t.Errorf("owner references %+v (multikueue %v)", tr.OwnerReferences, multiKueue)
			}
			if name, uid := evalv1.CampaignOf(tr); name != c.Name || uid != c.UID {
				t.Errorf("CampaignOf = %q %q, want %q %q", name, uid, c.Name, c.UID)
			}
			if _, ok := tr.Labels[evalv1.LabelCampaignUID]; ok != multiKueue {
				t.Errorf("label %s present %v, want %v", evalv1.LabelCampaignUID, ok, multiKueue)
			}
		})
	}
}
