package controllers_test

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/api/runnerpb"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
	dbclient "tolokaforge.io/operator/dbservice/client"
	runnerclient "tolokaforge.io/operator/runner/client"
)

var _ = Describe("Attempt credential", func() {
	var ns string
	BeforeEach(func() {
		ns = newNamespace()
		Expect(h.Client.Create(ctx, shopTask(ns, "shop", nil))).To(Succeed())
	})

	It("gives each attempt a Secret owned by the Trial, and its pods refuse calls without it", func() {
		key := types.NamespacedName{Namespace: ns, Name: "cred"}
		gt := gates.Hold(key, 1)
		Expect(h.Client.Create(ctx, oracleTrial(ns, key.Name, "shop"))).To(Succeed())
		waitGate(gt)
		tr := getTrial(key)

		var cred corev1.Secret
		Expect(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: controllers.AuthSecretName(getTrial(key), 1)}, &cred)).To(Succeed())
		owner := metav1.GetControllerOf(&cred)
		Expect(owner).NotTo(BeNil())
		Expect(owner.Kind).To(Equal("Trial"))
		Expect(owner.UID).To(Equal(tr.UID))
		token := string(cred.Data[authn.SecretKey])
		Expect(token).To(HaveLen(43), "32 random bytes, base64url")
		Expect(cred.Immutable).To(HaveValue(BeTrue()))

		// Both network policies exist before the pods.
		for _, name := range []string{controllers.NetworkPolicyName(key.Name), controllers.RunnersPolicyName} {
			Expect(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &networkingv1.NetworkPolicy{})).To(Succeed(), name)
		}

		// The registered runner refuses a caller without the token: the
		// refused CleanupTrial leaves the registration in place.
		ip, ok := h.Sim.PodAddr(ns, controllers.PodName(key.Name, 1, evalv1.RoleRunner))
		Expect(ok).To(BeTrue())
		anon, err := runnerclient.Dial(ctx, net.JoinHostPort(ip, strconv.Itoa(controllers.RunnerPort)))
		Expect(err).NotTo(HaveOccurred())
		defer anon.Close()
		_, err = anon.CleanupTrial(ctx, &runnerpb.CleanupTrialRequest{TrialId: "shop_orders_02:0"})
		Expect(status.Code(err)).To(Equal(codes.Unauthenticated))
		Expect(strings.Contains(err.Error(), token)).To(BeFalse())

		// The DB service likewise: 401 without, the trial's state with it.
		dbIP, ok := h.Sim.PodAddr(ns, controllers.PodName(key.Name, 1, evalv1.RoleDBService))
		Expect(ok).To(BeTrue())
		dbURL := "http://" + net.JoinHostPort(dbIP, strconv.Itoa(controllers.DBServicePort))
		_, err = dbclient.New(dbURL).Hash(ctx, "shop_orders_02:0")
		Expect(err).To(MatchError(dbclient.ErrUnauthenticated))
		before, err := dbclient.New(dbURL, dbclient.WithToken(token)).Hash(ctx, "shop_orders_02:0")
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.Get(dbURL + "/health")
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK), "health stays open")

		close(gt.Release)
		t := completed(key)
		Expect(findCond(t.Status.Conditions, evalv1.TrialCompleted).Reason).To(Equal("Passed"), describeTrial(t))
		Expect(t.Status.Attempts).To(HaveLen(1), "the refused CleanupTrial did not lose the trial")
		Expect(before.Version).To(BeNumerically(">=", 1))
		for _, c := range t.Status.Conditions {
			Expect(c.Message).NotTo(ContainSubstring(token))
		}
	})
})
