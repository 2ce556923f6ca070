package envtest

import (
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/examples/shop"
)

// shopMessage is the shop task's first customer message.
const shopMessage = "Hi! I'm customer C-101. I'd like 1 Wireless Headphones and 2 USB-C Hubs, paid from my balance."

// ShopDescription is the shop task's description, edited first unless edit
// is nil (the edit sees it as decoded JSON).
func ShopDescription(edit func(map[string]any)) ([]byte, error) {
	raw := shop.TaskJSON()
	if edit == nil {
		return raw, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode the shop task: %w", err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode the edited shop task: %w", err)
	}
	return out, nil
}

// taskWrapper builds a Task.
type taskWrapper struct{ evalv1.Task }

// makeTask starts a Task with no description.
func makeTask(name, ns string) *taskWrapper {
	return &taskWrapper{evalv1.Task{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
}

// ShopTask starts the shop Task: its description and first message.
func ShopTask(name, ns string) *taskWrapper {
	return makeTask(name, ns).Description(shop.TaskJSON()).InitialUserMessage(shopMessage)
}

// Description sets the task description (JSON).
func (w *taskWrapper) Description(raw []byte) *taskWrapper {
	w.Spec.Description = apiextensionsv1.JSON{Raw: raw}
	return w
}

// InitialUserMessage sets the first user message.
func (w *taskWrapper) InitialUserMessage(m string) *taskWrapper {
	w.Spec.InitialUserMessage = m
	return w
}

// Label adds a label.
func (w *taskWrapper) Label(k, v string) *taskWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// Obj returns the Task.
func (w *taskWrapper) Obj() *evalv1.Task { return &w.Task }

// Oracle is the oracle agent's model.
func Oracle() evalv1.ModelSpec { return evalv1.ModelSpec{Provider: evalv1.ProviderOracle} }

// trialWrapper builds a Trial.
type trialWrapper struct{ evalv1.Trial }

// MakeTrial starts a Trial.
func MakeTrial(name, ns string) *trialWrapper {
	return &trialWrapper{evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
}

// Task refers the Trial to a Task by name.
func (w *trialWrapper) Task(name string) *trialWrapper {
	w.Spec.TaskRef = &evalv1.TaskReference{Name: name}
	return w
}

// Agent sets the agent's model.
func (w *trialWrapper) Agent(m evalv1.ModelSpec) *trialWrapper {
	w.Spec.Agent = m
	return w
}

// Retry sets the retry policy: at most n attempts, backoff apart (0: the
// default backoff).
func (w *trialWrapper) Retry(n int32, backoff time.Duration) *trialWrapper {
	w.Spec.RetryPolicy = retry(n, backoff)
	return w
}

// Obj returns the Trial.
func (w *trialWrapper) Obj() *evalv1.Trial { return &w.Trial }

func retry(n int32, backoff time.Duration) evalv1.RetryPolicy {
	p := evalv1.RetryPolicy{MaxAttempts: n}
	if backoff > 0 {
		p.Backoff = &metav1.Duration{Duration: backoff}
	}
	return p
}

// CampaignWrapper builds a Campaign.
type CampaignWrapper struct{ evalv1.Campaign }

// MakeCampaign starts a Campaign.
func MakeCampaign(name, ns string) *CampaignWrapper {
	return &CampaignWrapper{evalv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
}

// Tasks lists the Campaign's Tasks by name.
func (w *CampaignWrapper) Tasks(names ...string) *CampaignWrapper {
	w.Spec.Tasks = evalv1.CampaignTasks{Names: names}
	return w
}

// TaskSelector picks the Campaign's Tasks by label.
func (w *CampaignWrapper) TaskSelector(s *metav1.LabelSelector) *CampaignWrapper {
	w.Spec.Tasks = evalv1.CampaignTasks{Selector: s}
	return w
}

// TrialsPerTask sets k.
func (w *CampaignWrapper) TrialsPerTask(k int32) *CampaignWrapper {
	w.Spec.TrialsPerTask = k
	return w
}

// MaxParallel bounds the non-terminal Trials.
func (w *CampaignWrapper) MaxParallel(n int32) *CampaignWrapper {
	w.Spec.MaxParallel = n
	return w
}

// Agent adds an agent.
func (w *CampaignWrapper) Agent(name string, m evalv1.ModelSpec) *CampaignWrapper {
	w.Spec.Agents = append(w.Spec.Agents, evalv1.NamedAgent{Name: name, Model: m})
	return w
}

// Retry sets the Trials' retry policy (see TrialWrapper.Retry).
func (w *CampaignWrapper) Retry(n int32, backoff time.Duration) *CampaignWrapper {
	w.Spec.RetryPolicy = retry(n, backoff)
	return w
}

// Obj returns the Campaign.
func (w *CampaignWrapper) Obj() *evalv1.Campaign { return &w.Campaign }
