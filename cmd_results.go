package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/artifacts/blobstore"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/manager"
)

const resultsUsage = `usage:
  tolokaforge results pull CAMPAIGN|TRIAL --out DIR [--namespace NS] [--kubeconfig PATH]

Reads the Campaign (its Trials) or the Trial of that name from the cluster,
follows each Trial's status.artifactsURL and writes its artifacts to
DIR/<agent>/trials/<task_id>/<index>/ (the latest attempt on top, every
attempt under attempts/<n>/), the layout "tolokaforge report --artifacts DIR"
reads. Store credentials come from the provider's environment.`

// resultsMain runs `tolokaforge results`.
func resultsMain(ctx context.Context, args []string) error {
	return runResults(ctx, args, os.Stdout, os.Stderr, nil)
}

// runResults is resultsMain with outputs and the cluster client injectable
// (nil: from --kubeconfig or the default loading rules).
func runResults(ctx context.Context, args []string, stdout, stderr io.Writer, c client.Reader) error {
	if len(args) == 0 || args[0] != "pull" {
		fmt.Fprintln(stderr, resultsUsage)
		return fmt.Errorf("results: want subcommand \"pull\", got %q", args)
	}
	fs := flag.NewFlagSet("results pull", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, resultsUsage); fs.PrintDefaults() }
	namespace := fs.String("namespace", "", "namespace (default: the kubeconfig context's, else default)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	out := fs.String("out", "", "directory to write the artifacts to (required)")
	positional, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("results pull: %w", err)
	}
	switch {
	case len(positional) != 1:
		return fmt.Errorf("results pull: name one campaign or trial, got %q", positional)
	case *out == "":
		return errors.New("results pull: --out DIR is required")
	}
	c, ns, err := clusterClient(c, *kubeconfig, *namespace)
	if err != nil {
		return fmt.Errorf("results pull: %w", err)
	}
	what, trials, err := trialsNamed(ctx, c, ns, positional[0])
	if err != nil {
		return fmt.Errorf("results pull: %w", err)
	}
	// Every destination is decided before anything is written.
	type job struct {
		trial *evalv1.Trial
		dir   string
	}
	var jobs []job
	var missing []string
	byDir := map[string]string{}
	for i := range trials {
		t := &trials[i]
		if t.Status.ArtifactsURL == "" {
			missing = append(missing, t.Name)
			continue
		}
		dir := filepath.Join(*out, artifacts.Segment(agentOf(t)))
		key := filepath.Join(dir, "trials", artifacts.Segment(t.Status.TaskID), fmt.Sprint(t.Spec.TrialIndex))
		if other, ok := byDir[key]; ok {
			return fmt.Errorf("results pull: trials %s and %s would both be written to %s (same agent, task and index)", other, t.Name, key)
		}
		byDir[key] = t.Name
		jobs = append(jobs, job{trial: t, dir: dir})
	}
	if len(jobs) == 0 {
		return fmt.Errorf("results pull: %s has no trial with status.artifactsURL (trials without: %s); nothing written", what, orNoneList(missing))
	}
	files := 0
	for _, j := range jobs {
		n, err := blobstore.PullTrial(ctx, j.trial.Status.ArtifactsURL, j.dir)
		if err != nil {
			return fmt.Errorf("results pull: trial %s/%s: %w", ns, j.trial.Name, err)
		}
		files += n
		fmt.Fprintf(stdout, "%s: %d files from %s\n", j.trial.Name, n, storeName(j.trial.Status.ArtifactsURL))
	}
	fmt.Fprintf(stdout, "pulled %d trial(s) of %s, %d files, into %s\n", len(jobs), what, files, *out)
	if len(missing) > 0 {
		fmt.Fprintf(stdout, "no artifacts yet: %s\n", strings.Join(missing, ", "))
	}
	return nil
}

// trialsNamed is the Campaign's Trials (by its label, controlled by it) when
// a Campaign has that name, else the one Trial of that name.
func trialsNamed(ctx context.Context, c client.Reader, ns, name string) (string, []evalv1.Trial, error) {
	var camp evalv1.Campaign
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &camp)
	switch {
	case err == nil:
		var list evalv1.TrialList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelCampaign: evalv1.LabelValue(name)}); err != nil {
			return "", nil, fmt.Errorf("list trials of campaign %s/%s: %w", ns, name, err)
		}
		var out []evalv1.Trial
		for _, t := range list.Items {
			// A Trial left by an earlier campaign of the same name is not this one's.
			if ref := metav1.GetControllerOf(&t); ref != nil && ref.UID == camp.UID {
				out = append(out, t)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return "campaign " + ns + "/" + name, out, nil
	case !apierrors.IsNotFound(err):
		return "", nil, fmt.Errorf("get campaign %s/%s: %w", ns, name, err)
	}
	var t evalv1.Trial
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &t); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil, fmt.Errorf("no campaign or trial %q in namespace %s; nothing written", name, ns)
		}
		return "", nil, fmt.Errorf("get trial %s/%s: %w", ns, name, err)
	}
	return "trial " + ns + "/" + name, []evalv1.Trial{t}, nil
}

// agentOf names a Trial's agent directory: the campaign's agent name, else
// the provider/model shown in status.
func agentOf(t *evalv1.Trial) string {
	if a := t.Labels[evalv1.LabelAgent]; a != "" {
		return a
	}
	if t.Status.Agent != "" {
		return t.Status.Agent
	}
	return "local"
}

// storeName is a URL without its query, for output.
func storeName(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}

func orNoneList(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// clusterClient is c, or a client from the kubeconfig; the namespace
// defaults to the kubeconfig context's.
func clusterClient(c client.Reader, kubeconfig, namespace string) (client.Reader, string, error) {
	if c != nil && namespace != "" {
		return c, namespace, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
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
		scheme, err := manager.Scheme()
		if err != nil {
			return nil, "", err
		}
		if c, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			return nil, "", fmt.Errorf("kubernetes client: %w", err)
		}
	}
	return c, namespace, nil
}
