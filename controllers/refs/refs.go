// Package refs answers, for the Trial and the Campaign controllers alike,
// whether the objects a spec refers to are there. Of the project it uses only api/, so
// both controllers (controllers/campaign does not import controllers) share
// one answer.
//
// Imports: api/v1alpha1, the standard library, k8s.io/api, k8s.io/apimachinery and
// sigs.k8s.io/controller-runtime.
package refs

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// MissingRef names an object a Trial or Campaign refers to that is not
// there for the manager: Reason is ReasonTaskNotFound,
// ReasonConfigMapNotFound, ReasonSecretNotFound, or ReasonNamespaceNotGranted
// when the manager may not read it at all.
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
	if m.Reason == evalv1.ReasonNamespaceNotGranted {
		what := fmt.Sprintf("the manager may not read %ss in namespace %s (%s %s", m.Kind, m.Namespace, m.Kind, m.Name)
		if m.Field != "" {
			what += ", " + m.Field
		}
		return what + "); the install grants it per namespace: helm value trialNamespaces or config/namespace-grant"
	}
	what := fmt.Sprintf("%s %s/%s not found", m.Kind, m.Namespace, m.Name)
	if m.Key != "" {
		what = fmt.Sprintf("%s %s/%s has no key %q", m.Kind, m.Namespace, m.Name, m.Key)
	}
	if m.Field != "" {
		what += " (" + m.Field + ")"
	}
	return what
}

// MissingSecret returns the first required Secret (or Secret key) of refs
// that is not there for the manager, nil when all are, read uncached (the
// manager may get Secrets but never lists or watches them). Optional
// references are skipped. A Forbidden read says nothing of the Secret but
// that the install did not grant ns (docs/install.md, "Least privilege"): it is
// reported as ReasonNamespaceNotGranted, never taken for a Secret that is
// there. Other errors are returned: they say nothing about the Secret.
func MissingSecret(ctx context.Context, r client.Reader, ns string, refs []evalv1.SecretUse) (*MissingRef, error) {
	for _, sr := range refs {
		if sr.Ref.Optional != nil && *sr.Ref.Optional {
			continue
		}
		s := &corev1.Secret{}
		err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: sr.Ref.Name}, s)
		switch {
		case apierrors.IsNotFound(err):
			return &MissingRef{Reason: evalv1.ReasonSecretNotFound, Kind: "Secret", Namespace: ns, Name: sr.Ref.Name, Field: sr.Field}, nil
		case apierrors.IsForbidden(err):
			return &MissingRef{Reason: evalv1.ReasonNamespaceNotGranted, Kind: "Secret", Namespace: ns, Name: sr.Ref.Name, Field: sr.Field}, nil
		case err != nil:
			return nil, fmt.Errorf("read secret %s/%s (%s): %w", ns, sr.Ref.Name, sr.Field, err)
		}
		if _, ok := s.Data[sr.Ref.Key]; !ok {
			return &MissingRef{Reason: evalv1.ReasonSecretNotFound, Kind: "Secret", Namespace: ns, Name: sr.Ref.Name, Key: sr.Ref.Key, Field: sr.Field}, nil
		}
	}
	return nil, nil
}
