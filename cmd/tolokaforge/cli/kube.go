package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/results/cluster"
)

// kubeFlags are kubectl's flags for reaching a cluster (--kubeconfig,
// --context, -n/--namespace), on the commands that read one. They are bound
// to client-go's clientcmd loading rules and overrides, which is what
// k8s.io/cli-runtime's genericclioptions wraps: the same flags and the same
// kubeconfig resolution ($KUBECONFIG, ~/.kube/config, in-cluster), without
// the 47 MB that genericclioptions links (kustomize, through its resource
// builder) into a binary every runner and DB-service pod starts.
type kubeFlags struct {
	rules     *clientcmd.ClientConfigLoadingRules
	overrides clientcmd.ConfigOverrides
	namespace string
}

// addKubeFlags registers the kubeconfig flags on c; nsHelp is --namespace's
// help text.
func addKubeFlags(c *cobra.Command, nsHelp string) *kubeFlags {
	k := &kubeFlags{rules: clientcmd.NewDefaultClientConfigLoadingRules()}
	fs := c.Flags()
	fs.StringVar(&k.rules.ExplicitPath, "kubeconfig", "", "Path to the kubeconfig file to use for CLI requests.")
	fs.StringVar(&k.overrides.CurrentContext, "context", "", "The name of the kubeconfig context to use")
	fs.StringVarP(&k.namespace, "namespace", "n", "", nsHelp)
	return k
}

// client is c (a test's) or a client of the cluster the flags name, and
// the namespace: --namespace, else the kubeconfig context's, else default.
func (k *kubeFlags) client(c client.Reader) (client.Reader, string, error) {
	return cluster.ClientFor(c, clientcmd.NewNonInteractiveDeferredLoadingClientConfig(k.rules, &k.overrides), k.namespace)
}
