package controllers

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/authn"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// AuthSecretName is the deterministic name of an attempt's credential
// Secret, so a create retried after a lost response finds its own Secret
// (and the token the pods already mount) instead of making a second one.
// It carries the Trial's UID: a Trial deleted and re-created under the same
// name (a Campaign's rerun) must not find its predecessor's Secret, which
// garbage collection may not have removed yet.
func AuthSecretName(t *evalv1.Trial, attempt int32) string {
	uid := string(t.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	suffix := fmt.Sprintf("-a%d-auth-%s", attempt, uid)
	return shortName(t.Name, 253-len(suffix)) + suffix
}

// authSecret is an attempt's credential: a fresh random token (package
// authn) both pods mount and the manager's runner client presents. Owned by
// the Trial, so it goes with it; immutable, so a token the pods read never
// changes under them. One per attempt: an attempt's pods cannot be reached
// with a token of an earlier attempt.
//
// envToken is the exec agent's (a terminal task's environment): a second
// token, so the runner's never enters the task's container, where the
// agent is root.
func authSecret(a attemptRef, token, envToken string) *corev1.Secret {
	t := a.Trial
	labels := map[string]string{
		evalv1.LabelName:      evalv1.AppName,
		evalv1.LabelManagedBy: evalv1.ManagedByValue,
		evalv1.LabelInstance:  evalv1.LabelValue(t.Name),
		evalv1.LabelTrial:     evalv1.LabelValue(t.Name),
		evalv1.LabelAttempt:   strconv.Itoa(int(a.Number)),
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            AuthSecretName(t, a.Number),
			Namespace:       t.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{ownerRef(t)},
		},
		Type:      corev1.SecretTypeOpaque,
		Immutable: ptr.To(true),
		Data:      map[string][]byte{authn.SecretKey: []byte(token), EnvironmentTokenKey: []byte(envToken)},
	}
}

// attemptToken reads an attempt's token back (uncached: the manager gets
// Secrets but never lists or watches them). The error names the Secret,
// never its content.
func attemptToken(ctx context.Context, r client.Reader, t *evalv1.Trial, attempt int32) (string, error) {
	return attemptSecretKey(ctx, r, t, attempt, authn.SecretKey)
}

// attemptEnvironmentToken reads the token of the attempt's environment (its
// exec agent's) back, as attemptToken does the runner's.
func attemptEnvironmentToken(ctx context.Context, r client.Reader, t *evalv1.Trial, attempt int32) (string, error) {
	return attemptSecretKey(ctx, r, t, attempt, EnvironmentTokenKey)
}

func attemptSecretKey(ctx context.Context, r client.Reader, t *evalv1.Trial, attempt int32, key string) (string, error) {
	name := AuthSecretName(t, attempt)
	s := &corev1.Secret{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: name}, s); err != nil {
		return "", fmt.Errorf("read the attempt's credential secret %s/%s: %w", t.Namespace, name, err)
	}
	if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != t.UID {
		// A Secret of that name not made for this Trial could hold a token
		// someone else knows.
		return "", fmt.Errorf("secret %s/%s is not controlled by trial %s", t.Namespace, name, t.Name)
	}
	tok := string(s.Data[key])
	if tok == "" {
		return "", fmt.Errorf("secret %s/%s has no %q key", t.Namespace, name, key)
	}
	return tok, nil
}
