// Package pull is `tolokaforge results pull` without its flags: it follows
// each Trial's status.artifactsURL and copies the artifacts into the local
// layout `tolokaforge report --artifacts DIR` reads.
//
// Imports: api/artifacts, api/artifacts/blobstore, api/v1alpha1, results/cluster, the
// standard library, k8s.io/apimachinery and sigs.k8s.io/controller-runtime.
package pull

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/artifacts/blobstore"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/results/cluster"
)

// Pull writes the artifacts of the Campaign name (its Trials) or else of the
// Trial name, in namespace ns, to out/<agent>/trials/<task_id>/<index>/,
// and says what it pulled on w.
func Pull(ctx context.Context, c client.Reader, ns, name, out string, w io.Writer) error {
	what, trials, err := trialsNamed(ctx, c, ns, name)
	if err != nil {
		return err
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
		dir := filepath.Join(out, artifacts.Segment(agentOf(t)))
		key := filepath.Join(dir, "trials", artifacts.Segment(t.Status.TaskID), fmt.Sprint(t.Spec.TrialIndex))
		if other, ok := byDir[key]; ok {
			return fmt.Errorf("trials %s and %s would both be written to %s (same agent, task and index)", other, t.Name, key)
		}
		byDir[key] = t.Name
		jobs = append(jobs, job{trial: t, dir: dir})
	}
	if len(jobs) == 0 {
		return fmt.Errorf("%s has no trial with status.artifactsURL (trials without: %s); nothing written", what, orNoneList(missing))
	}
	files := 0
	for _, j := range jobs {
		n, err := blobstore.PullTrial(ctx, j.trial.Status.ArtifactsURL, j.dir)
		if err != nil {
			return fmt.Errorf("trial %s/%s: %w", ns, j.trial.Name, err)
		}
		files += n
		fmt.Fprintf(w, "%s: %d files from %s\n", j.trial.Name, n, storeName(j.trial.Status.ArtifactsURL))
	}
	fmt.Fprintf(w, "pulled %d trial(s) of %s, %d files, into %s\n", len(jobs), what, files, out)
	if len(missing) > 0 {
		fmt.Fprintf(w, "no artifacts yet: %s\n", strings.Join(missing, ", "))
	}
	return nil
}

// trialsNamed is the Campaign's Trials when a Campaign has that name, else
// the one Trial of that name.
func trialsNamed(ctx context.Context, c client.Reader, ns, name string) (string, []evalv1.Trial, error) {
	var camp evalv1.Campaign
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &camp)
	switch {
	case err == nil:
		trials, err := cluster.CampaignTrials(ctx, c, &camp)
		if err != nil {
			return "", nil, err
		}
		return "campaign " + ns + "/" + name, trials, nil
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
