package v1alpha1_test

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/test/envtest/controlplane"
)

// These specs run against a real kube-apiserver and etcd built from source by
// hack/build-envtest.sh, so CRD schemas and CEL rules are judged by the server
// that will judge them in production.
var (
	k8sClient client.Client
	testEnv   *controlplane.ControlPlane
	ctx       context.Context
	cancel    context.CancelFunc
)

func TestAPI(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("KUBEBUILDER_ASSETS is unset in CI; run through `make test`")
		}
		t.Skip("KUBEBUILDER_ASSETS unset; run `make test` (or export KUBEBUILDER_ASSETS=$(make -s envtest))")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "API validation suite")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	testEnv, err = controlplane.Start(controlplane.Options{CRDs: true})
	Expect(err).NotTo(HaveOccurred())
	cfg := testEnv.Config
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(evalv1.AddToScheme(scheme)).To(Succeed())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	cancel()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
