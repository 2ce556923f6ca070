package controllers

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	"tolokaforge.io/operator/api/result"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// defaultMaxTurns applies when neither the Trial nor its Task sets one.
const defaultMaxTurns = 30

// runID names the run a trial belongs to: its Campaign when a Campaign
// controls it, else the Trial itself ("<namespace>/<name>").
func runID(t *evalv1.Trial) string {
	if name, _ := evalv1.CampaignOf(t); name != "" {
		return t.Namespace + "/" + name
	}
	return t.Namespace + "/" + t.Name
}

// buildTrialSpec is the TrialSpec of attempt n without a gateway: the judge
// gets no credential (see BuildTrialSpecVia).
func buildTrialSpec(t *evalv1.Trial, n int32, desc *task.TaskDescription, dbURL string) *task.TrialSpec {
	return buildTrialSpecVia(t, n, desc, dbURL, "")
}

// buildTrialSpecVia is the TrialSpec of attempt n. No key is in it: the
// agent's stays in the manager; the judge calls the manager's gateway at
// gatewayURL, its api_key_env naming the gateway token's file in the runner
// pod's secrets directory. The provider key never reaches the runner.
func buildTrialSpecVia(t *evalv1.Trial, n int32, desc *task.TaskDescription, dbURL, gatewayURL string) *task.TrialSpec {
	// The trial_id ("<task_id>:<index>") needs no cluster-wide uniqueness:
	// every attempt has a runner and a DB service of its own. The Kubernetes
	// identity travels as run_id ("<namespace>/<name>") and in runtime_context.
	s := task.NewTrialSpec(task.TrialSpecParams{
		Task:         desc,
		TrialIndex:   int(t.Spec.TrialIndex),
		RunID:        runID(t),
		AttemptID:    AttemptID(t, n),
		Agent:        modelConfig(t.Spec.Agent, ""),
		DBServiceURL: dbURL,
	})
	s.RuntimeContext = map[string]json.RawMessage{
		"namespace": jsonString(t.Namespace),
		"trial":     jsonString(t.Name),
		"trial_uid": jsonString(string(t.UID)),
		"attempt":   json.RawMessage(strconv.Itoa(int(n))),
	}
	if u := t.Spec.UserSimulator; u != nil && u.Mode == evalv1.UserSimulatorLLM && u.Model != nil {
		s.UserSimulatorModel = modelConfig(*u.Model, "")
	}
	if j := t.Spec.Judge; j != nil {
		s.Judge = modelConfig(*j, "")
		if usesGateway(t, gatewayURL) {
			s.Judge.BaseURL = gatewayURL
			s.Judge.APIKeyEnv = judgeKeyFile
		}
	}
	return s
}

func modelConfig(m evalv1.ModelSpec, keyEnv string) *task.ModelConfig {
	c := &task.ModelConfig{
		Provider:    task.Provider(m.Provider),
		Model:       m.Model,
		BaseURL:     m.BaseURL,
		APIKeyEnv:   keyEnv,
		Temperature: m.Temperature,
		TopP:        m.TopP,
		Seed:        m.Seed,
	}
	if c.Provider == "" {
		c.Provider = task.ProviderOracle
	}
	if m.MaxTokens != nil {
		v := int(*m.MaxTokens)
		c.MaxTokens = &v
	}
	if m.MaxCompletionTokens != nil {
		v := int(*m.MaxCompletionTokens)
		c.MaxCompletionTokens = &v
	}
	c.ReasoningEffort = m.ReasoningEffort
	if m.ExtraBody != nil && len(m.ExtraBody.Raw) > 0 {
		c.ExtraBody = append(json.RawMessage(nil), m.ExtraBody.Raw...)
	}
	// ExtraHeaders stay out of the spec: their values are Secrets, read at
	// attempt start into the actor (ActorRequest.Headers) and nowhere else.
	if m.Timeout != nil {
		c.RequestTimeoutSeconds = m.Timeout.Seconds()
	}
	if r := m.RateLimit; r != nil {
		c.RateLimit = &task.RateLimit{RequestsPerMinute: int(r.RequestsPerMinute), TokensPerMinute: r.TokensPerMinute}
	}
	if p := m.Pricing; p != nil {
		c.Pricing = &task.Pricing{InputUSDPerMTok: p.InputUSDPerMTok, OutputUSDPerMTok: p.OutputUSDPerMTok, CachedInputUSDPerMTok: p.CachedInputUSDPerMTok}
	}
	return c
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// maxTurns is the Trial's turn budget, else the Task's, else DefaultMaxTurns.
func maxTurns(t *evalv1.Trial, rt *resolvedTask) int {
	if t.Spec.MaxTurns != nil && *t.Spec.MaxTurns > 0 {
		return int(*t.Spec.MaxTurns)
	}
	if rt != nil && rt.MaxTurns != nil && *rt.MaxTurns > 0 {
		return int(*rt.MaxTurns)
	}
	return defaultMaxTurns
}

// agentLabel is what the Agent printer column shows.
func agentLabel(m evalv1.ModelSpec) string {
	p := string(m.Provider)
	if p == "" {
		p = string(evalv1.ProviderOracle)
	}
	if m.Model == "" {
		return p
	}
	return p + "/" + m.Model
}

// recordOf is who runs t, for its artifacts: its Campaign (the controller
// owner; a label value may be hashed) and the agent's name in it, else the
// agent's provider/model.
func recordOf(t *evalv1.Trial) result.Record {
	r := result.Record{Namespace: t.Namespace, Trial: t.Name, Agent: t.Labels[evalv1.LabelAgent]}
	if name, _ := evalv1.CampaignOf(t); name != "" {
		r.Campaign = name
	}
	if r.Agent == "" {
		r.Agent = agentLabel(t.Spec.Agent)
	}
	return r
}

// trialArtifactsKey is the Trial's folder in an artifacts store:
// <namespace>/<name>/ (status.artifactsURL).
func trialArtifactsKey(t *evalv1.Trial) string {
	return t.Namespace + "/" + t.Name + "/"
}

// attemptArtifactsKey is attempt n's folder in an artifacts store, the
// layout of AttemptArtifactsDir: each attempt its own keys, whichever
// manager replica drives it.
func attemptArtifactsKey(t *evalv1.Trial, n int32) string {
	return fmt.Sprintf("%sattempt-%d", trialArtifactsKey(t), n)
}

// attemptArtifactsDir is where attempt n writes its artifacts: one directory
// per Trial object and attempt, so two Trials of the same task and index
// (different agents) never share files.
func attemptArtifactsDir(root string, t *evalv1.Trial, n int32) string {
	if root == "" {
		return ""
	}
	return filepath.Join(root, t.Namespace, t.Name, fmt.Sprintf("attempt-%d", n))
}
