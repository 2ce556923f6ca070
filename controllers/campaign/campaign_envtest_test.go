package campaign_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"tolokaforge.io/operator/runner/tools/builtin"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
	"tolokaforge.io/operator/results/report"
	"tolokaforge.io/operator/test/envtest"
)

var _ = Describe("Campaign", func() {
	// 3 tasks x 4 trials x 2 agents: the oracle passes everything; the
	// scripted LLM passes shop-a and shop-b and fails shop-c every time.
	It("runs 3 tasks x 4 trials x 2 agents within maxParallel and aggregates them", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop-a", "a"), shopTask(ns, "shop-b", "b"), shopTask(ns, "shop-c", "fail"))
		w := watchParallel(ns)
		c := newCampaign(ns, "eval", 4, 5, "shop-a", "shop-b", "shop-c").Agent("oracle", envtest.Oracle()).Agent("llm", llmModel()).Obj()
		create(c)
		key := client.ObjectKeyFromObject(c)
		c = completed(key, evalv1.ReasonFinished)
		peak, seen := w.stop()

		st := c.Status
		Expect(st.Counts).To(Equal(evalv1.TrialCounts{Total: 24, Passed: 20, Failed: 4}))
		Expect(st.Progress).To(BeEquivalentTo("24/24"), "display, agents, tasks, k")
		Expect(st.AgentCount).To(BeEquivalentTo(2), "display, agents, tasks, k")
		Expect(st.TaskCount).To(BeEquivalentTo(3), "display, agents, tasks, k")
		Expect(st.K).To(BeEquivalentTo(4), "display, agents, tasks, k")
		Expect(peak).To(BeNumerically(">=", 1), "at most %d non-terminal at once (maxParallel 5)", peak)
		Expect(peak).To(BeNumerically("<=", 5), "at most %d non-terminal at once (maxParallel 5)", peak)
		Expect(seen).To(Equal(24), "the watcher saw %d Trials", seen)
		GinkgoWriter.Printf("peak non-terminal Trials: %d of maxParallel 5\n", peak)

		// By hand: six cells of n=4. The oracle's three and the LLM's shop-a
		// and shop-b have c=4 (pass@1 = pass^4 = 1); the LLM's shop-c has c=0.
		o := st.Overall
		Expect(o.Trials).To(BeEquivalentTo(24), "overall %+v", o)
		Expect(o.Passes).To(BeEquivalentTo(20), "overall %+v", o)
		Expect(o.KCells).To(BeEquivalentTo(6), "overall %+v", o)
		Expect(o.Tokens).To(BeEquivalentTo(12*tokensPerTrial), "overall %+v", o)
		near("overall pass@1 = 5/6", o.PassAt1, 5.0/6)
		near("overall pass^4 = 5/6", o.PassHatK, 5.0/6)
		near("overall pass@4 = 5/6", o.PassAtK, 5.0/6)
		Expect(o.CostUSD).To(BeEquivalentTo(12*usdPerTrial), "cost %v spent %+v", o.CostUSD, st.Spent)
		Expect(st.Spent.CostUSD).To(BeEquivalentTo(12*usdPerTrial), "cost %v spent %+v", o.CostUSD, st.Spent)
		Expect(st.Spent.Tokens).To(BeEquivalentTo(12*tokensPerTrial), "cost %v spent %+v", o.CostUSD, st.Spent)
		or, llm := keyed(st.PerAgent, "oracle"), keyed(st.PerAgent, "llm")
		near("oracle pass@1", or.PassAt1, 1)
		near("oracle pass^4", or.PassHatK, 1)
		Expect(or.Trials).To(BeEquivalentTo(12), "oracle %+v", or)
		Expect(or.Passes).To(BeEquivalentTo(12), "oracle %+v", or)
		Expect(or.Tokens).To(BeEquivalentTo(0), "oracle %+v", or)
		Expect(or.CostUSD).To(BeEquivalentTo(0.0), "oracle %+v", or)
		near("llm pass@1 = 2/3", llm.PassAt1, 2.0/3)
		near("llm pass^4 = 2/3", llm.PassHatK, 2.0/3)
		near("llm pass@4 = 2/3", llm.PassAtK, 2.0/3)
		Expect(llm.Trials).To(BeEquivalentTo(12), "llm %+v", llm)
		Expect(llm.Passes).To(BeEquivalentTo(8), "llm %+v", llm)
		Expect(llm.Tokens).To(BeEquivalentTo(12*tokensPerTrial), "llm %+v", llm)
		Expect(llm.CostUSD).To(BeEquivalentTo(12*usdPerTrial), "llm %+v", llm)
		sc := keyed(st.PerTask, "shop-c")
		near("shop-c pass@1 = (1+0)/2", sc.PassAt1, 0.5)
		near("shop-c pass^4 = (1+0)/2", sc.PassHatK, 0.5)
		Expect(sc.Trials).To(BeEquivalentTo(8), "shop-c %+v", sc)
		Expect(sc.Passes).To(BeEquivalentTo(4), "shop-c %+v", sc)
		sa := keyed(st.PerTask, "shop-a")
		near("shop-a pass^4", sa.PassHatK, 1)

		// Exactly one Trial per cell, named deterministically. A Trial the
		// infrastructure made retry still counts once above.
		trials := trialsOf(ns, "eval")
		var names []string
		retried := 0
		for _, tr := range trials {
			names = append(names, tr.Name)
			Expect(tr.Status.Attempts).NotTo(BeEmpty(), "trial %s", tr.Name)
			Expect(tr.Status.Attempts).To(HaveLen(int(tr.Status.AttemptCount)), "trial %s attemptCount", tr.Name)
			if len(tr.Status.Attempts) > 1 {
				retried++
			}
			Expect(tr.Labels[evalv1.LabelCampaign]).To(Equal("eval"), "trial %s labels", tr.Name)
			Expect(tr.Annotations[evalv1.AnnotationCampaignGeneration]).To(Equal("1"), "trial %s annotations", tr.Name)
			ref := metav1.GetControllerOf(&tr)
			Expect(ref).NotTo(BeNil(), "trial %s is not controlled by the campaign", tr.Name)
			Expect(ref.UID).To(Equal(c.UID), "trial %s is not controlled by the campaign", tr.Name)
		}
		var wantNames []string
		for _, a := range []string{"oracle", "llm"} {
			for _, task := range []string{"shop-a", "shop-b", "shop-c"} {
				for i := 0; i < 4; i++ {
					wantNames = append(wantNames, fmt.Sprintf("eval-%s-%s-%d", a, task, i))
				}
			}
		}
		GinkgoWriter.Printf("%d of 24 trials needed more than one attempt\n", retried)
		sort.Strings(names)
		sort.Strings(wantNames)
		Expect(names).To(Equal(wantNames))
		for _, tr := range trials {
			wantPhase := evalv1.PhasePassed
			if tr.Labels[evalv1.LabelAgent] == "llm" && tr.Spec.TaskRef.Name == "shop-c" {
				wantPhase = evalv1.PhaseFailed
			}
			Expect(tr.Status.Phase).To(Equal(wantPhase), "trial %s", tr.Name)
		}
		cond := meta.FindStatusCondition(st.Conditions, evalv1.CampaignProgressing)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Status).To(Equal(metav1.ConditionFalse), "Progressing %+v", cond)
		Expect(cond.Reason).To(Equal(evalv1.ReasonFinished), "Progressing %+v", cond)

		// The report reads the same Trials and agrees.
		rep, err := report.FromCampaign(bg, s.Client, ns, "eval")
		Expect(err).NotTo(HaveOccurred())
		rows := rep.Rows()
		Expect(rows).To(HaveLen(6))
		Expect(rep.K).To(BeEquivalentTo(4))
		for _, r := range rows {
			failing := r.Agent == "llm" && r.Task == "shop-c"
			Expect(r.N).To(BeEquivalentTo(4), "report row %+v", r)
			Expect(r.C == 0).To(Equal(failing), "report row %+v", r)
			Expect(*r.PassHat).To(Equal(map[bool]float64{true: 0, false: 1}[failing]), "report row %+v", r)
			if failing {
				Expect(r.Failures).To(HaveLen(1), "report failures of llm/shop-c: %+v", r.Failures)
				Expect(r.Failures[0].Count).To(BeEquivalentTo(4), "report failures of llm/shop-c: %+v", r.Failures)
				Expect(r.Failures[0].Reason).To(HavePrefix("hash mismatch (customers: 0 added, 0 removed, 1 modified;"))
			}
		}
		var table bytes.Buffer
		Expect(rep.WriteTable(&table)).To(Succeed())
		Expect(table.String()).To(ContainSubstring("llm     12  0      8       0.667   0.667   0.667"))
	})

	// At $0.50 a trial and one at a time, a $1.25 budget lets the first three
	// start (spent 0, 0.5, 1.0 < 1.25) and stops the fourth (1.5).
	It("stops creating Trials once the budget is spent", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop", "ok"))
		w := watchParallel(ns)
		c := newCampaign(ns, "budget", 6, 1, "shop").Agent("llm", llmModel()).Obj()
		c.Spec.Budget = &evalv1.Budget{MaxUSD: ptr.To(1.25)}
		create(c)
		c = completed(client.ObjectKeyFromObject(c), evalv1.ReasonBudgetExceeded)
		peak, seen := w.stop()

		st := c.Status
		Expect(st.Counts).To(Equal(evalv1.TrialCounts{Total: 6, Queued: 3, Passed: 3}))
		Expect(st.Spent.CostUSD).To(Equal(1.5))
		Expect(st.Spent.Tokens).To(BeEquivalentTo(3 * tokensPerTrial))
		Expect(st.Progress).To(Equal("3/6"))
		be := meta.FindStatusCondition(st.Conditions, evalv1.CampaignBudgetExceeded)
		Expect(be).NotTo(BeNil())
		Expect(be.Status).To(Equal(metav1.ConditionTrue), "BudgetExceeded %+v", be)
		Expect(be.Message).To(Equal("spent $1.5000 of $1.2500: no more Trials are created, running Trials finish"))
		var idx []int32
		for _, tr := range trialsOf(ns, "budget") {
			idx = append(idx, tr.Spec.TrialIndex)
		}
		sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
		Expect(idx).To(Equal([]int32{0, 1, 2}), "trial indexes")
		Expect(seen).To(Equal(3), "Trials seen")
		Expect(peak).To(Equal(1), "peak non-terminal")
		// n=3 < k=6: pass^6 cannot be estimated.
		Expect(st.Overall.PassHatK).To(BeNil(), "overall %+v", st.Overall)
		Expect(st.Overall.KCells).To(BeZero(), "overall %+v", st.Overall)
	})

	// Two of four oracle trials lose their runner pod mid-trial with one
	// attempt allowed: they end InfraFailed. spec.rerun [InfraFailed] deletes
	// and re-creates exactly those two; every count stays one per Trial.
	It("reruns the InfraFailed Trials after a pod loss, and only those", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop", "ok"))
		c := newCampaign(ns, "rerun", 4, 4, "shop").Agent("oracle", envtest.Oracle()).Obj()
		c.Spec.RetryPolicy = evalv1.RetryPolicy{MaxAttempts: 1}
		// Pods of their own, killed by name (a slot lost mid-trial is the
		// slots specs').
		c.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsDisabled}
		lost := []string{campaign.TrialName("rerun", "oracle", "shop", 1), campaign.TrialName("rerun", "oracle", "shop", 3)}
		var gs []*envtest.Gate
		for _, name := range lost {
			gs = append(gs, s.gates.Hold(types.NamespacedName{Namespace: ns, Name: name}, 1))
		}
		create(c)
		key := client.ObjectKeyFromObject(c)
		for i, g := range gs {
			Eventually(g.Reached, waitLong).Should(BeClosed(), "trial %s never reached its agent", lost[i])
			Expect(s.Sim.Kill(ns, controllers.PodName(lost[i], 1, evalv1.RoleRunner))).To(Succeed())
			close(g.Release)
		}
		c = completed(key, evalv1.ReasonFinished)
		Expect(c.Status.Counts).To(Equal(evalv1.TrialCounts{Total: 4, Passed: 2, InfraFailed: 2}), "before rerun")
		Expect(c.Status.Overall.Trials).To(BeEquivalentTo(2), "infra failures entered the estimators: %+v", c.Status.Overall)
		Expect(c.Status.Overall.PassHatK).To(BeNil(), "infra failures entered the estimators: %+v", c.Status.Overall)
		before := map[string]types.UID{}
		for _, tr := range trialsOf(ns, "rerun") {
			before[tr.Name] = tr.UID
		}

		eventually(waitLong, func() error {
			cur := getCampaign(key)
			cur.Spec.Rerun = []evalv1.TrialPhase{evalv1.PhaseInfraFailed}
			return s.Client.Update(bg, cur)
		})
		c = completed(key, evalv1.ReasonFinished)
		st := c.Status
		Expect(st.Counts).To(Equal(evalv1.TrialCounts{Total: 4, Passed: 4}), "after rerun")
		Expect(st.Rerun).NotTo(BeNil())
		Expect(st.Rerun.Generation).To(BeEquivalentTo(2), "rerun status %+v", st.Rerun)
		Expect(st.Rerun.Retired).To(BeEquivalentTo(2), "rerun status %+v", st.Rerun)
		Expect(st.Rerun.Deleting).To(BeEmpty(), "rerun status %+v", st.Rerun)
		Expect(st.Overall.Trials).To(BeEquivalentTo(4), "overall %+v", st.Overall)
		Expect(st.Overall.Passes).To(BeEquivalentTo(4), "overall %+v", st.Overall)
		Expect(st.Overall.KCells).To(BeEquivalentTo(1), "overall %+v", st.Overall)
		near("pass^4 after rerun", st.Overall.PassHatK, 1)
		trials := trialsOf(ns, "rerun")
		Expect(trials).To(HaveLen(4), "trials after the rerun")
		for _, tr := range trials {
			wasLost := tr.Name == lost[0] || tr.Name == lost[1]
			Expect(tr.UID != before[tr.Name]).To(Equal(wasLost), "trial %s: re-created, lost=%v", tr.Name, wasLost)
			Expect(tr.Status.Attempts).To(HaveLen(1), "trial %s", tr.Name)
			Expect(tr.Status.Phase).To(Equal(evalv1.PhasePassed), "trial %s", tr.Name)
			if wasLost {
				Expect(tr.Annotations[evalv1.AnnotationCampaignGeneration]).To(Equal("2"), "re-created trial %s", tr.Name)
			}
		}
	})

	// Raising k and adding a task adds only the new cells; a deleted Trial
	// comes back, once.
	It("adds only what is new on an edit, and re-creates a deleted Trial once", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop-a", "a"), shopTask(ns, "shop-b", "b"))
		c := newCampaign(ns, "grow", 2, 10, "shop-a").Agent("oracle", envtest.Oracle()).Obj()
		create(c)
		key := client.ObjectKeyFromObject(c)
		completed(key, evalv1.ReasonFinished)
		first := map[string]types.UID{}
		for _, tr := range trialsOf(ns, "grow") {
			first[tr.Name] = tr.UID
		}
		Expect(first).To(HaveLen(2))
		eventually(waitLong, func() error {
			cur := getCampaign(key)
			cur.Spec.TrialsPerTask = 3
			cur.Spec.Tasks.Names = []string{"shop-a", "shop-b"}
			return s.Client.Update(bg, cur)
		})
		c = completed(key, evalv1.ReasonFinished)
		Expect(c.Status.Counts).To(Equal(evalv1.TrialCounts{Total: 6, Passed: 6}))
		Expect(c.Status.Progress).To(Equal("6/6"))
		trials := trialsOf(ns, "grow")
		kept := 0
		for _, tr := range trials {
			if uid, ok := first[tr.Name]; ok {
				Expect(tr.UID).To(Equal(uid), "trial %s was re-created by the edit", tr.Name)
				kept++
			} else {
				Expect(tr.Annotations[evalv1.AnnotationCampaignGeneration]).To(Equal("2"), "new trial %s", tr.Name)
			}
		}
		Expect(trials).To(HaveLen(6))
		Expect(kept).To(Equal(2))

		// A Trial deleted by hand is missing from the plan and comes back.
		victim := campaign.TrialName("grow", "oracle", "shop-b", 1)
		old := &evalv1.Trial{}
		Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: victim}, old)).To(Succeed())
		Expect(s.Client.Delete(bg, old)).To(Succeed())
		eventually(waitLong, func() error {
			tr := &evalv1.Trial{}
			if err := s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: victim}, tr); err != nil {
				return err
			}
			if tr.UID == old.UID || tr.Status.Phase != evalv1.PhasePassed {
				return fmt.Errorf("not re-created and passed yet (uid %s phase %s)", tr.UID, tr.Status.Phase)
			}
			return nil
		})
		c = completed(key, evalv1.ReasonFinished)
		Expect(c.Status.Counts.Total).To(BeEquivalentTo(6), "after re-creation: %+v", c.Status.Counts)
		Expect(c.Status.Counts.Passed).To(BeEquivalentTo(6), "after re-creation: %+v", c.Status.Counts)
		Expect(trialsOf(ns, "grow")).To(HaveLen(6))
	})

	// pack import's stream applies as is, and a Campaign over the imported
	// Task runs on the Go shop server.
	It("runs over a Task applied from pack import's stream", func() {
		ns := newNamespace()
		conv, err := pack.Convert("../../../shared/fixtures/tolokaforge/shop_orders_02", pack.Options{Builtins: builtin.Catalog{}, Namespace: ns})
		Expect(err).NotTo(HaveOccurred())
		m, err := pack.Build(conv, pack.Options{Builtins: builtin.Catalog{}, Namespace: ns})
		Expect(err).NotTo(HaveOccurred())
		var stream bytes.Buffer
		Expect(pack.WriteStream(&stream, []*pack.Manifests{m})).To(Succeed())
		for _, doc := range strings.Split(stream.String(), "\n---\n") {
			js, err := sigyaml.YAMLToJSON([]byte(doc)) // what kubectl does
			Expect(err).NotTo(HaveOccurred())
			u := &unstructured.Unstructured{}
			Expect(u.UnmarshalJSON(js)).To(Succeed())
			Expect(s.Client.Create(bg, u)).To(Succeed(), "apply %s %s", u.GetKind(), u.GetName())
		}
		eventually(waitLong, func() error {
			tk := &evalv1.Task{}
			if err := s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: "shop-orders-02"}, tk); err != nil {
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
		c := newCampaign(ns, "imported", 2, 2, "shop-orders-02").Agent("oracle", envtest.Oracle()).Obj()
		create(c)
		c = completed(client.ObjectKeyFromObject(c), evalv1.ReasonFinished)
		Expect(c.Status.Counts).To(Equal(evalv1.TrialCounts{Total: 2, Passed: 2}))
		for _, tr := range trialsOf(ns, "imported") {
			g := tr.Status.Grade
			Expect(g).NotTo(BeNil(), "trial %s", tr.Name)
			Expect(g.Components.StateChecks).To(HaveValue(Equal(1.0)), "trial %s grade %+v", tr.Name, g)
			Expect(g.Reasons).To(HavePrefix("State: hash match"), "trial %s", tr.Name)
		}
	})

	// The API server keeps custom resources as untyped JSON and writes a
	// float with an integral value back as an integer: the reason pack
	// import moves such initial states into a ConfigMap's data, which it
	// keeps verbatim.
	It("shows the API server drops integral float literals a ConfigMap keeps", func() {
		ns := newNamespace()
		tk := shopTask(ns, "literal", "x")
		sent := string(tk.Spec.Description.Raw)
		create(tk)
		got := &evalv1.Task{}
		Expect(s.Client.Get(bg, client.ObjectKeyFromObject(tk), got)).To(Succeed())
		var d struct {
			InitialState struct {
				Tables struct {
					Customers []json.RawMessage `json:"customers"`
				} `json:"tables"`
			} `json:"initial_state"`
		}
		Expect(json.Unmarshal(got.Spec.Description.Raw, &d)).To(Succeed())
		Expect(sent).To(ContainSubstring(`"balance":300.0`), "the fixture changed: no 300.0 literal sent")
		Expect(string(d.InitialState.Tables.Customers[0])).To(Or(ContainSubstring(`"balance":300}`), ContainSubstring(`"balance":300,`)),
			"the API server kept the literal: the importer's ConfigMap rule for integral floats is unnecessary")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lit"}, Data: map[string]string{"t": `{"a":300.0}`}}
		create(cm)
		back := &corev1.ConfigMap{}
		Expect(s.Client.Get(bg, client.ObjectKeyFromObject(cm), back)).To(Succeed())
		Expect(back.Data["t"]).To(Equal(`{"a":300.0}`))
	})
})
