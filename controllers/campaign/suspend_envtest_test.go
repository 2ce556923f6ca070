package campaign_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/test/envtest"
)

// eventsOf lists "Type/Reason: note" of the events about one Campaign.
func eventsOf(ns, name string) []string {
	GinkgoHelper()
	var evs eventsv1.EventList
	Expect(s.Client.List(bg, &evs, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Kind == "Campaign" && e.Regarding.Name == name {
			out = append(out, fmt.Sprintf("%s/%s: %s", e.Type, e.Reason, e.Note))
		}
	}
	return out
}

func condOf(key client.ObjectKey, typ string) *metav1.Condition {
	GinkgoHelper()
	return meta.FindStatusCondition(getCampaign(key).Status.Conditions, typ)
}

var _ = Describe("Campaign holds", func() {
	It("creates no Trial while spec.suspend is true and runs them all once resumed", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop-a", "a"))
		c := newCampaign(ns, "held", 2, 5, "shop-a").Agent("oracle", envtest.Oracle()).Obj()
		c.Spec.Suspend = ptr.To(true)
		create(c)
		key := client.ObjectKeyFromObject(c)

		eventually(waitLong, func() error {
			if got := condOf(key, evalv1.CampaignSuspended); got == nil || got.Status != metav1.ConditionTrue || got.Reason != evalv1.ReasonSuspended {
				return fmt.Errorf("Suspended = %+v", got)
			}
			return nil
		})
		Consistently(func() int { return len(trialsOf(ns, "held")) }, 2*time.Second, pollEvery).Should(BeZero())
		Expect(getCampaign(key).Status.Counts.Queued).To(BeEquivalentTo(2))

		orig := getCampaign(key)
		resumed := orig.DeepCopy()
		resumed.Spec.Suspend = ptr.To(false)
		Expect(s.Client.Patch(bg, resumed, client.MergeFrom(orig))).To(Succeed())
		done := completed(key, evalv1.ReasonFinished)
		Expect(done.Status.Counts).To(Equal(evalv1.TrialCounts{Total: 2, Passed: 2}))
		sc := meta.FindStatusCondition(done.Status.Conditions, evalv1.CampaignSuspended)
		Expect(sc).NotTo(BeNil())
		Expect(sc.Status).To(Equal(metav1.ConditionFalse))
		Expect(sc.Reason).To(Equal(evalv1.ReasonResumed))
		Eventually(func() []string { return eventsOf(ns, "held") }, waitLong, pollEvery).Should(ContainElements(
			"Normal/Suspended: spec.suspend is true: no Trial is created; those created and not finished run to their end",
			"Normal/Resumed: spec.suspend is false: Trials are created again"))
	})

	It("creates no Trial while an agent's Secret is missing, and says which", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop-a", "a"))
		m := envtest.Oracle()
		m.APIKeySecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k"}
		c := newCampaign(ns, "nokey", 1, 5, "shop-a").Agent("oracle", m).Obj()
		create(c)
		key := client.ObjectKeyFromObject(c)
		msg := "Secret " + ns + "/absent not found (spec.agents[oracle].model.apiKeySecretRef); no Trial is created until it exists"
		eventually(waitLong, func() error {
			if got := condOf(key, evalv1.CampaignReferencesResolved); got == nil || got.Status != metav1.ConditionFalse ||
				got.Reason != evalv1.ReasonSecretNotFound || got.Message != msg {
				return fmt.Errorf("ReferencesResolved = %+v", got)
			}
			return nil
		})
		Consistently(func() int { return len(trialsOf(ns, "nokey")) }, 2*time.Second, pollEvery).Should(BeZero())
		Eventually(func() []string { return eventsOf(ns, "nokey") }, waitLong, pollEvery).Should(ContainElement("Warning/SecretNotFound: " + msg))
	})

	It("is deleted, Trials and all, ttlSecondsAfterFinished after it completed", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop-a", "a"))
		c := newCampaign(ns, "brief", 1, 5, "shop-a").Agent("oracle", envtest.Oracle()).Obj()
		c.Spec.TTLSecondsAfterFinished = ptr.To[int32](3)
		create(c)
		key := client.ObjectKeyFromObject(c)
		completed(key, evalv1.ReasonFinished)
		trials := trialsOf(ns, "brief")
		Expect(trials).To(HaveLen(1))
		Expect(trials[0].Spec.TTLSecondsAfterFinished).To(BeNil(), "the ttl stays on the Campaign")
		Eventually(func() bool {
			return apierrors.IsNotFound(s.Client.Get(bg, key, &evalv1.Campaign{}))
		}, waitLong, pollEvery).Should(BeTrue())
	})
})
