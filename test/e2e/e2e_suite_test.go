package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

var (
	root       string
	kubeconfig string
	kubectlBin string
	k8s        client.Client
)

func TestE2E(t *testing.T) {
	kubeconfig = os.Getenv("E2E_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("E2E_KUBECONFIG is not set: the e2e suite needs the cluster of `make e2e` (test/nodecluster)")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "e2e on real nodes")
}

var _ = BeforeSuite(func() {
	var err error
	root, err = filepath.Abs(filepath.Join("..", ".."))
	Expect(err).NotTo(HaveOccurred())
	kubectlBin = os.Getenv("E2E_KUBECTL")
	if kubectlBin == "" {
		kubectlBin = filepath.Join(root, "bin", "k8s", "kubectl")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(evalv1.AddToScheme(scheme)).To(Succeed())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

// kubectl runs the cluster's kubectl, as a user would, and returns stdout;
// stdin, when given, is the manifest.
func kubectl(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	if err != nil {
		return out.String(), &cmdError{args: args, err: err, stderr: errb.String()}
	}
	return out.String(), nil
}

type cmdError struct {
	args   []string
	err    error
	stderr string
}

func (e *cmdError) Error() string {
	return "kubectl " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + e.stderr
}

func mustKubectl(stdin string, args ...string) string {
	GinkgoHelper()
	out, err := kubectl(stdin, args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}
