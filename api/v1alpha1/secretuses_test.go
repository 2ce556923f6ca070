package v1alpha1

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestSecretUses(t *testing.T) {
	sel := func(name string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}
	}
	model := func(key, header string) ModelSpec {
		m := ModelSpec{BaseURL: "https://" + key + ".example/v1"}
		if key != "" {
			m.APIKeySecretRef = sel(key)
		}
		if header != "" {
			m.ExtraHeaders = []ExtraHeader{{Name: "X-Org", ValueFrom: HeaderValueSource{SecretKeyRef: *sel(header)}}}
		}
		return m
	}
	fields := func(uses []SecretUse) []string {
		var out []string
		for _, u := range uses {
			out = append(out, u.Field+"="+u.Ref.Name+"@"+u.BaseURL)
		}
		return out
	}
	judge := model("j", "")
	llmUser := model("u", "")
	scriptedUser := model("s", "")
	for _, c := range []struct {
		name string
		got  []SecretUse
		want []string
	}{
		{"agent key and header, LLM user, judge", (&TrialSpec{Agent: model("a", "h"),
			UserSimulator: &UserSimulatorSpec{Mode: UserSimulatorLLM, Model: &llmUser}, Judge: &judge}).SecretUses(),
			[]string{"spec.agent.apiKeySecretRef=a@https://a.example/v1", "spec.agent.extraHeaders[X-Org]=h@https://a.example/v1",
				"spec.userSimulator.model.apiKeySecretRef=u@https://u.example/v1", "spec.judge.apiKeySecretRef=j@https://j.example/v1"}},
		{"a scripted user's model is never read", (&TrialSpec{Agent: model("", ""),
			UserSimulator: &UserSimulatorSpec{Mode: UserSimulatorScripted, Model: &scriptedUser}}).SecretUses(), nil},
		{"campaign agents by name", (&CampaignSpec{Agents: []NamedAgent{{Name: "gpt", Model: model("a", "")}}, Judge: &judge}).SecretUses(),
			[]string{"spec.agents[gpt].model.apiKeySecretRef=a@https://a.example/v1", "spec.judge.apiKeySecretRef=j@https://j.example/v1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fields(c.got); !slices.Equal(got, c.want) {
				t.Fatalf("uses %q, want %q", got, c.want)
			}
		})
	}
}
