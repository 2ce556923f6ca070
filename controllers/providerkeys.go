package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/llm"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/gateway"
	"tolokaforge.io/operator/controllers/refs"
)

// normalizeBaseURL is the form base URLs are compared in: surrounding spaces
// and trailing slashes dropped, the provider default when empty. Nothing else
// is rewritten (no case folding, no default ports): the annotation names the
// URL the model spec names, byte for byte.
func normalizeBaseURL(s string) string {
	s = strings.TrimRight(strings.TrimSpace(s), "/")
	if s == "" {
		return llm.DefaultBaseURL
	}
	return s
}

// allowedBaseURLs parses a Secret's AnnotationAllowedBaseURLs value.
func allowedBaseURLs(v string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if f = strings.TrimRight(strings.TrimSpace(f), "/"); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// keyError says why a provider Secret cannot be used. Transient ones (the
// Secret or its key not there yet, an API hiccup) may heal; the rest (not
// opted in, namespace not granted) need someone to change something.
type keyError struct {
	Reason    string
	Transient bool
	Err       error
}

func (e *keyError) Error() string { return e.Err.Error() }
func (e *keyError) Unwrap() error { return e.Err }

// readProviderKey reads one key of a provider Secret for use at baseURL
// (normalized). The Secret is read with reader, which in the manager is the
// uncached API reader: one get, no list or watch, so the manager's Role in a
// Trial namespace needs only `get` on Secrets. The value is returned, never
// put into an error.
func readProviderKey(ctx context.Context, reader client.Reader, ns string, ref *corev1.SecretKeySelector, baseURL string) (string, error) {
	if ref == nil {
		return "", nil
	}
	optional := ref.Optional != nil && *ref.Optional
	s := &corev1.Secret{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, s); err != nil {
		switch {
		case optional && apierrors.IsNotFound(err):
			return "", nil
		case apierrors.IsForbidden(err):
			return "", &keyError{Reason: evalv1.ReasonNamespaceNotGranted, Err: fmt.Errorf(
				"the manager may not read Secrets in namespace %s (secret %s: %w); the install grants it per namespace: helm value trialNamespaces or config/namespace-grant",
				ns, ref.Name, err)}
		}
		return "", &keyError{Reason: evalv1.ReasonAPIKeyUnavailable, Transient: true, Err: fmt.Errorf("read secret %s/%s: %w", ns, ref.Name, err)}
	}
	allowed, ok := s.Annotations[evalv1.AnnotationAllowedBaseURLs]
	if !ok {
		return "", &keyError{Reason: evalv1.ReasonSecretNotAllowed, Err: fmt.Errorf(
			"secret %s/%s may not be sent to %s: it has no annotation %s listing the base URLs it may be sent to",
			ns, ref.Name, baseURL, evalv1.AnnotationAllowedBaseURLs)}
	}
	listed := allowedBaseURLs(allowed)
	found := false
	for _, u := range listed {
		if u == baseURL {
			found = true
			break
		}
	}
	if !found {
		return "", &keyError{Reason: evalv1.ReasonSecretNotAllowed, Err: fmt.Errorf(
			"secret %s/%s may not be sent to %s: its annotation %s lists only %q",
			ns, ref.Name, baseURL, evalv1.AnnotationAllowedBaseURLs, listed)}
	}
	v, ok := s.Data[ref.Key]
	if !ok {
		if optional {
			return "", nil
		}
		return "", &keyError{Reason: evalv1.ReasonAPIKeyUnavailable, Transient: true,
			Err: fmt.Errorf("secret %s/%s has no key %q", ns, ref.Name, ref.Key)}
	}
	return string(v), nil
}

// trialSecrets is the Trial's reading of refs.MissingSecret: a missing
// Secret is a missing reference (Invalid, ReferencesResolved false), while
// one in a namespace the install did not grant ends the Trial as every
// refused provider Secret does (Invalid, TrialFailed NamespaceNotGranted):
// nobody can create it into existence.
func trialSecrets(ctx context.Context, reader client.Reader, ns string, uses []evalv1.SecretUse) (*refs.MissingRef, *keyError, error) {
	m, err := refs.MissingSecret(ctx, reader, ns, uses)
	if err != nil {
		return nil, nil, err
	}
	if m != nil && m.Reason == evalv1.ReasonNamespaceNotGranted {
		return nil, &keyError{Reason: m.Reason, Err: errors.New(m.String())}, nil
	}
	return m, nil, nil
}

// checkProviderKeys reads every Secret the Trial would send to a model and
// checks each is opted in for that model's base URL. It runs before an
// attempt's pods are created, so a Trial that may not use a key never gets
// a pod. Errors name the spec field, the Secret and the URL.
func checkProviderKeys(ctx context.Context, reader client.Reader, t *evalv1.Trial) *keyError {
	for _, u := range t.Spec.SecretUses() {
		if _, err := readProviderKey(ctx, reader, t.Namespace, u.Ref, normalizeBaseURL(u.BaseURL)); err != nil {
			var ke *keyError
			if !errors.As(err, &ke) {
				ke = &keyError{Reason: evalv1.ReasonAPIKeyUnavailable, Transient: true, Err: err}
			}
			return &keyError{Reason: ke.Reason, Transient: ke.Transient, Err: fmt.Errorf("%s: %w", u.Field, ke.Err)}
		}
	}
	return nil
}

// usesGateway says whether the Trial's judge calls a model, through the
// manager's gateway at gatewayURL (empty: no gateway configured, and the
// runner gets no credential at all, never the provider key).
func usesGateway(t *evalv1.Trial, gatewayURL string) bool {
	j := t.Spec.Judge
	return gatewayURL != "" && j != nil && j.Provider != "" && j.Provider != evalv1.ProviderOracle
}

// JudgeUpstream is the gateway's view of a Trial: its judge's base URL and
// model, with the key and extra headers read from the judge's Secrets (each
// checked for the base URL, as for the agent) at every call, so a Secret
// rotated or withdrawn mid-trial takes effect at once.
func JudgeUpstream(reader client.Reader) gateway.UpstreamFunc {
	return func(ctx context.Context, t *evalv1.Trial) (gateway.Upstream, error) {
		j := t.Spec.Judge
		if j == nil || j.Provider == "" || j.Provider == evalv1.ProviderOracle {
			return gateway.Upstream{}, errors.New("the trial has no judge model")
		}
		base := normalizeBaseURL(j.BaseURL)
		key, err := readProviderKey(ctx, reader, t.Namespace, j.APIKeySecretRef, base)
		if err != nil {
			return gateway.Upstream{}, fmt.Errorf("spec.judge.apiKeySecretRef: %w", err)
		}
		up := gateway.Upstream{BaseURL: base, APIKey: key, Models: []string{j.Model}}
		for i := range j.ExtraHeaders {
			h := &j.ExtraHeaders[i]
			v, err := readProviderKey(ctx, reader, t.Namespace, &h.ValueFrom.SecretKeyRef, base)
			if err != nil {
				return gateway.Upstream{}, fmt.Errorf("spec.judge.extraHeaders[%s]: %w", h.Name, err)
			}
			if v != "" {
				if up.Headers == nil {
					up.Headers = map[string]string{}
				}
				up.Headers[h.Name] = v
			}
		}
		return up, nil
	}
}

// checkNamespaceGrant asks, before any pod, whether the manager may manage
// Secrets in the Trial's namespace: every attempt's credential Secret and a
// judge's gateway token are created there, and a Trial with no key Secret
// would otherwise only meet the missing grant when they are created.
func checkNamespaceGrant(ctx context.Context, reader client.Reader, t *evalv1.Trial) *keyError {
	name := gateway.SecretName(t.Name)
	err := reader.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: name}, &corev1.Secret{})
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return nil
	case apierrors.IsForbidden(err):
		return &keyError{Reason: evalv1.ReasonNamespaceNotGranted, Err: fmt.Errorf(
			"namespace %s is not granted to the manager: it may not manage the attempt credential and gateway token Secrets there (secret %s: %w); the install grants namespaces one by one: helm value trialNamespaces or config/namespace-grant",
			t.Namespace, name, err)}
	}
	return &keyError{Reason: evalv1.ReasonAPIKeyUnavailable, Transient: true, Err: fmt.Errorf("read secret %s/%s: %w", t.Namespace, name, err)}
}
