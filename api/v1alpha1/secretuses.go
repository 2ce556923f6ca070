package v1alpha1

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// SecretUse is one Secret value a spec sends to a model: its API key or the
// value of one of its extra headers. The fail-fast check, the base-URL opt-in
// and the manager's reads all walk the same list, so a new reference is
// checked everywhere once it is listed here.
// +kubebuilder:object:generate=false
type SecretUse struct {
	// Field is the spec path that names the Secret, for messages.
	Field string
	Ref   *corev1.SecretKeySelector
	// BaseURL is the model's base URL as written (empty: the provider default).
	BaseURL string
}

// SecretUses lists the Secret values the model reads; field is its spec path.
func (m *ModelSpec) SecretUses(field string) []SecretUse {
	if m == nil {
		return nil
	}
	var out []SecretUse
	if m.APIKeySecretRef != nil {
		out = append(out, SecretUse{Field: field + ".apiKeySecretRef", Ref: m.APIKeySecretRef, BaseURL: m.BaseURL})
	}
	for i := range m.ExtraHeaders {
		h := &m.ExtraHeaders[i]
		out = append(out, SecretUse{Field: fmt.Sprintf("%s.extraHeaders[%s]", field, h.Name), Ref: &h.ValueFrom.SecretKeyRef, BaseURL: m.BaseURL})
	}
	return out
}

// SecretUses lists every Secret value a Trial's attempts read: the agent's,
// the LLM user simulator's and the judge's.
func (s *TrialSpec) SecretUses() []SecretUse {
	uses := s.Agent.SecretUses("spec.agent")
	if u := s.UserSimulator; u != nil && u.Mode == UserSimulatorLLM {
		uses = append(uses, u.Model.SecretUses("spec.userSimulator.model")...)
	}
	return append(uses, s.Judge.SecretUses("spec.judge")...)
}

// SecretUses lists every Secret value the Campaign's Trials would read.
func (s *CampaignSpec) SecretUses() []SecretUse {
	var uses []SecretUse
	for i := range s.Agents {
		uses = append(uses, s.Agents[i].Model.SecretUses(fmt.Sprintf("spec.agents[%s].model", s.Agents[i].Name))...)
	}
	if u := s.UserSimulator; u != nil && u.Mode == UserSimulatorLLM {
		uses = append(uses, u.Model.SecretUses("spec.userSimulator.model")...)
	}
	return append(uses, s.Judge.SecretUses("spec.judge")...)
}
