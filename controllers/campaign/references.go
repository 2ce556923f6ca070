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

// missingSecret names the first required Secret (or key) that does not
// exist, read uncached; "" when all do.
func missingSecret(ctx context.Context, r client.Reader, ns string, refs []evalv1.SecretUse) (string, error) {
	for _, sr := range refs {
		if sr.Ref.Optional != nil && *sr.Ref.Optional {
			continue
		}
		s := &corev1.Secret{}
		err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: sr.Ref.Name}, s)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("Secret %s/%s not found (%s)", ns, sr.Ref.Name, sr.Field), nil
		case err != nil:
			return "", fmt.Errorf("read secret %s/%s (%s): %w", ns, sr.Ref.Name, sr.Field, err)
		}
		if _, ok := s.Data[sr.Ref.Key]; !ok {
			return fmt.Sprintf("Secret %s/%s has no key %q (%s)", ns, sr.Ref.Name, sr.Ref.Key, sr.Field), nil
		}
	}
	return "", nil
}
