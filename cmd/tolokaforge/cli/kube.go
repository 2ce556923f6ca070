package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/results/cluster"
)

// kubeFlags are kubectl's flags for reaching a cluster (--kubeconfig,
// --context, -n/--namespace), on the commands that read one.
type kubeFlags struct {
	*genericclioptions.ConfigFlags
}

// addKubeFlags registers the kubeconfig flags on c; nsHelp is --namespace's
// help text.
func addKubeFlags(c *cobra.Command, nsHelp string) *kubeFlags {
	all := genericclioptions.NewConfigFlags(false)
	k := &kubeFlags{&genericclioptions.ConfigFlags{KubeConfig: all.KubeConfig, Context: all.Context, Namespace: all.Namespace}}
	k.AddFlags(c.Flags())
	c.Flags().Lookup("namespace").Usage = nsHelp
	return k
}

// client is c (a test's) or a client of the cluster the flags name, and
// the namespace: --namespace, else the kubeconfig context's, else default.
func (k *kubeFlags) client(c client.Reader) (client.Reader, string, error) {
	return cluster.ClientFor(c, k.ToRawKubeConfigLoader(), *k.Namespace)
}
