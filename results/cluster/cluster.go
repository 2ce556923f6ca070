// Package cluster is how the command line reads results from a cluster: a
// client from a kubeconfig, and the Trials a Campaign controls. `results
// pull` and `report CAMPAIGN` both read through it.
//
// Imports: api/v1alpha1, the standard library, k8s.io/apimachinery, k8s.io/client-go
// and sigs.k8s.io/controller-runtime.
package cluster

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// Client is c and namespace, each defaulting to the kubeconfig's: the file
// given, else the default loading rules ($KUBECONFIG, ~/.kube/config,
// in-cluster), the namespace being its context's. Tests pass both and never
// touch a kubeconfig.
func Client(c client.Reader, kubeconfig, namespace string) (client.Reader, string, error) {
	if c != nil && namespace != "" {
		return c, namespace, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	return ClientFor(c, clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}), namespace)
}

// ClientFor is Client with the kubeconfig already loaded as cc (the
// command line's kubeconfig flags: file, context, namespace): c defaults
// to a client of cc's cluster and namespace to cc's.
func ClientFor(c client.Reader, cc clientcmd.ClientConfig, namespace string) (client.Reader, string, error) {
	if c != nil && namespace != "" {
		return c, namespace, nil
	}
	if namespace == "" {
		ns, _, err := cc.Namespace()
		if err != nil {
			return nil, "", fmt.Errorf("kubeconfig namespace: %w", err)
		}
		namespace = ns
	}
	if c == nil {
		cfg, err := cc.ClientConfig()
		if err != nil {
			return nil, "", fmt.Errorf("kubeconfig: %w", err)
		}
		s := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(s); err != nil {
			return nil, "", fmt.Errorf("scheme: %w", err)
		}
		if err := evalv1.AddToScheme(s); err != nil {
			return nil, "", fmt.Errorf("scheme: %w", err)
		}
		if c, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
			return nil, "", fmt.Errorf("kubernetes client: %w", err)
		}
	}
	return c, namespace, nil
}

// CampaignTrials are the Trials camp controls, by name. The campaign label
// alone is not enough: a Trial left by an earlier campaign of the same name
// carries it too, and is not this one's.
func CampaignTrials(ctx context.Context, r client.Reader, camp *evalv1.Campaign) ([]evalv1.Trial, error) {
	var list evalv1.TrialList
	if err := r.List(ctx, &list, client.InNamespace(camp.Namespace), client.MatchingLabels{evalv1.LabelCampaign: evalv1.LabelValue(camp.Name)}); err != nil {
		return nil, fmt.Errorf("list trials of campaign %s/%s: %w", camp.Namespace, camp.Name, err)
	}
	var out []evalv1.Trial
	for _, t := range list.Items {
		if _, uid := evalv1.CampaignOf(&t); uid == camp.UID {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
