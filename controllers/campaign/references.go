package campaign

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// secretRecheck is how often a Campaign held by a missing Secret looks
// again: the manager may get Secrets but never watches them.
const secretRecheck = 30 * time.Second

type secretRef struct {
	field string
	ref   *corev1.SecretKeySelector
}

func modelSecretRefs(field string, m *evalv1.ModelSpec) []secretRef {
	if m == nil {
		return nil
	}
	var out []secretRef
	if m.APIKeySecretRef != nil {
		out = append(out, secretRef{field + ".apiKeySecretRef", m.APIKeySecretRef})
	}
	for i := range m.ExtraHeaders {
		h := &m.ExtraHeaders[i]
		out = append(out, secretRef{fmt.Sprintf("%s.extraHeaders[%s]", field, h.Name), &h.ValueFrom.SecretKeyRef})
	}
	return out
}

// campaignSecretRefs lists every Secret the Campaign's Trials would read.
func campaignSecretRefs(s *evalv1.CampaignSpec) []secretRef {
	var refs []secretRef
	for i := range s.Agents {
		refs = append(refs, modelSecretRefs(fmt.Sprintf("spec.agents[%s].model", s.Agents[i].Name), &s.Agents[i].Model)...)
	}
	if u := s.UserSimulator; u != nil && u.Mode == evalv1.UserSimulatorLLM {
		refs = append(refs, modelSecretRefs("spec.userSimulator.model", u.Model)...)
	}
	return append(refs, modelSecretRefs("spec.judge", s.Judge)...)
}

// missingSecret names the first required Secret (or key) that does not
// exist, read uncached; "" when all do.
func missingSecret(ctx context.Context, r client.Reader, ns string, refs []secretRef) (string, error) {
	for _, sr := range refs {
		if sr.ref.Optional != nil && *sr.ref.Optional {
			continue
		}
		s := &corev1.Secret{}
		err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: sr.ref.Name}, s)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("Secret %s/%s not found (%s)", ns, sr.ref.Name, sr.field), nil
		case err != nil:
			return "", fmt.Errorf("read secret %s/%s (%s): %w", ns, sr.ref.Name, sr.field, err)
		}
		if _, ok := s.Data[sr.ref.Key]; !ok {
			return fmt.Sprintf("Secret %s/%s has no key %q (%s)", ns, sr.ref.Name, sr.ref.Key, sr.field), nil
		}
	}
	return "", nil
}
