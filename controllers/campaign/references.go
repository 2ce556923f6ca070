package campaign

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/refs"
)

// secretRecheck is how often a Campaign held by a missing (or unreadable)
// Secret looks again: the manager may get Secrets but never watches them.
const secretRecheck = 30 * time.Second

// campaignSecrets is what holds the Campaign's Trials back, as the
// condition's message and reason ("" when nothing does). A Secret the
// manager may not read holds them as a missing one does, rechecked every
// secretRecheck: creating Trials that each end NamespaceNotGranted helps
// nobody, and the namespace may yet be granted.
func campaignSecrets(ctx context.Context, r client.Reader, ns string, uses []evalv1.SecretUse) (msg, reason string, err error) {
	m, err := refs.MissingSecret(ctx, r, ns, uses)
	if err != nil || m == nil {
		return "", "", err
	}
	return m.String(), m.Reason, nil
}
