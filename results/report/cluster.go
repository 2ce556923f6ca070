package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/result"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/campaign"
	"tolokaforge.io/operator/results/cluster"
)

// FromCampaign reads a Campaign and the Trials it controls.
func FromCampaign(ctx context.Context, r client.Reader, namespace, name string) (*Report, error) {
	var c evalv1.Campaign
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &c); err != nil {
		return nil, fmt.Errorf("get campaign %s/%s: %w", namespace, name, err)
	}
	trials, err := cluster.CampaignTrials(ctx, r, &c)
	if err != nil {
		return nil, err
	}
	rep := &Report{Title: "campaign " + namespace + "/" + name, K: int(c.Spec.TrialsPerTask)}
	for _, a := range c.Spec.Agents {
		rep.Agents = append(rep.Agents, a.Name)
	}
	for i := range trials {
		rep.Trials = append(rep.Trials, trialOf(&trials[i]))
	}
	var tasks []string
	seen := map[string]bool{}
	for _, t := range rep.Trials {
		if !seen[t.Task] {
			seen[t.Task] = true
			tasks = append(tasks, t.Task)
		}
	}
	sort.Strings(tasks)
	rep.Tasks = tasks
	rep.normalize()
	return rep, nil
}

// trialOf is a Trial object's report line. The task is the Task object's
// name the campaign recorded (the task_id for Trials made by hand).
func trialOf(t *evalv1.Trial) Trial {
	o := campaign.OutcomeOf(t)
	out := Trial{
		Name:        t.Name,
		Agent:       o.Agent,
		Task:        o.Task,
		Index:       int(t.Spec.TrialIndex),
		Phase:       string(o.Phase),
		Score:       o.Score,
		Tokens:      o.Tokens,
		CostUSD:     o.CostUSD,
		Turns:       int(t.Status.Turns),
		Termination: t.Status.TerminationReason,
	}
	if out.Agent == "" {
		out.Agent = t.Status.Agent
	}
	if out.Task == "" {
		out.Task = t.Status.TaskID
	}
	if out.Phase == "" {
		out.Phase = string(evalv1.PhasePending)
	}
	if u := t.Status.Usage; u != nil {
		for _, a := range []evalv1.TokenUsage{u.Agent, u.UserSimulator, u.Judge} {
			out.PromptTokens += a.PromptTokens
			out.CompletionTokens += a.CompletionTokens
			out.ReasoningTokens += a.ReasoningTokens
		}
	}
	out.Costed = out.CostUSD > 0 || t.Spec.Agent.Pricing != nil
	if s, e := t.Status.StartTime, t.Status.CompletionTime; s != nil && e != nil {
		out.LatencyS = e.Sub(s.Time).Seconds()
	}
	if p := t.Status.ArtifactsPath; p != "" {
		out.GradeFile = filepath.Join(p, "grade.yaml")
		out.TranscriptFile = filepath.Join(p, "trajectory.yaml")
	}
	out.Reason = failureReason(t, out.Phase)
	if g := t.Status.Grade; g != nil {
		out.Components = result.FromStatus(g).Components
	}
	// A manager whose artifacts directory is on this machine (tolokaforge
	// dev) gives the trial a page too.
	if p := t.Status.ArtifactsPath; p != "" {
		if st, err := os.Stat(filepath.Join(p, trajectoryFile)); err == nil && !st.IsDir() {
			out.Dir = p
		}
	}
	return out
}

// failureReason is a short, groupable cause for a Trial that did not pass.
func failureReason(t *evalv1.Trial, phase string) string {
	completedMsg := ""
	if c := meta.FindStatusCondition(t.Status.Conditions, evalv1.TrialCompleted); c != nil {
		completedMsg = c.Message
	}
	switch phase {
	case string(evalv1.PhasePassed):
		return ""
	case string(evalv1.PhaseFailed):
		if term := t.Status.TerminationReason; term != "" && term != "agent_done" && term != "user_stop" {
			return "termination: " + term
		}
		if g := t.Status.Grade; g != nil {
			if g.DiffSummary != "" {
				return shortReason(g.DiffSummary)
			}
			return shortReason(result.FromStatus(g).FirstFailing())
		}
		return "failed without a grade"
	case string(evalv1.PhaseInfraFailed):
		if n := len(t.Status.Attempts); n > 0 {
			if r := t.Status.Attempts[n-1].Reason; r != "" {
				return "InfraFailed: " + r
			}
		}
		return "InfraFailed"
	case string(evalv1.PhaseGradingFailed), string(evalv1.PhaseInvalid), string(evalv1.PhaseProtocolSkew):
		if completedMsg != "" {
			return phase + ": " + shortReason(completedMsg)
		}
		return phase
	}
	return "not finished (" + phase + ")"
}

// FromKubeconfig is FromCampaign for a command line: c and namespace
// default to the kubeconfig's (cluster.Client).
func FromKubeconfig(ctx context.Context, c client.Reader, kubeconfig, namespace, name string) (*Report, error) {
	c, namespace, err := cluster.Client(c, kubeconfig, namespace)
	if err != nil {
		return nil, err
	}
	return FromCampaign(ctx, c, namespace, name)
}
