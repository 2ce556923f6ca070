package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// MissingRef names an object a Trial or Campaign refers to that does not
// exist: Reason is ReasonTaskNotFound, ReasonConfigMapNotFound or
// ReasonSecretNotFound.
type MissingRef struct {
	Reason    string
	Kind      string
	Namespace string
	Name      string
	// Key is the key the reference wants, when the object exists without it.
	Key string
	// Field is where the reference is written (spec.agent.apiKeySecretRef).
	Field string
}

func (m *MissingRef) String() string {
	what := fmt.Sprintf("%s %s/%s not found", m.Kind, m.Namespace, m.Name)
	if m.Key != "" {
		what = fmt.Sprintf("%s %s/%s has no key %q", m.Kind, m.Namespace, m.Name, m.Key)
	}
	if m.Field != "" {
		what += " (" + m.Field + ")"
	}
	return what
}

// secretRef is one Secret reference of a spec and where it is written.
type secretRef struct {
	field string
	ref   *corev1.SecretKeySelector
}

// modelSecretRefs lists the Secrets a model reads: its API key and the
// values of its extra headers.
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

// TrialSecretRefs lists every Secret a Trial's attempts read: the agent's,
// the LLM user simulator's and the judge's.
func trialSecretRefs(s *evalv1.TrialSpec) []secretRef {
	refs := modelSecretRefs("spec.agent", &s.Agent)
	if u := s.UserSimulator; u != nil && u.Mode == evalv1.UserSimulatorLLM {
		refs = append(refs, modelSecretRefs("spec.userSimulator.model", u.Model)...)
	}
	return append(refs, modelSecretRefs("spec.judge", s.Judge)...)
}

// missingSecret returns the first required Secret (or Secret key) of refs
// that does not exist, read uncached (the manager may get Secrets but never
// lists or watches them). Optional references are skipped. Errors other than
// NotFound are returned: they say nothing about the Secret.
func missingSecret(ctx context.Context, r client.Reader, ns string, refs []secretRef) (*MissingRef, error) {
	for _, sr := range refs {
		if sr.ref.Optional != nil && *sr.ref.Optional {
			continue
		}
		s := &corev1.Secret{}
		err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: sr.ref.Name}, s)
		switch {
		case apierrors.IsNotFound(err):
			return &MissingRef{Reason: evalv1.ReasonSecretNotFound, Kind: "Secret", Namespace: ns, Name: sr.ref.Name, Field: sr.field}, nil
		case apierrors.IsForbidden(err):
			// Not a missing object: CheckProviderKeys names the namespace
			// the install did not grant.
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("read secret %s/%s (%s): %w", ns, sr.ref.Name, sr.field, err)
		}
		if _, ok := s.Data[sr.ref.Key]; !ok {
			return &MissingRef{Reason: evalv1.ReasonSecretNotFound, Kind: "Secret", Namespace: ns, Name: sr.ref.Name, Key: sr.ref.Key, Field: sr.field}, nil
		}
	}
	return nil, nil
}
