package controllers

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func TestAllowedBaseURLsParsesCommasAndNewlines(t *testing.T) {
	got := allowedBaseURLs(" https://a.example/v1/ ,https://b.example/v1\n\nhttp://c:8080/v1//\r\n")
	want := []string{"https://a.example/v1", "https://b.example/v1", "http://c:8080/v1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("AllowedBaseURLs = %q, want %q", got, want)
	}
	if normalizeBaseURL("") != "https://api.openai.com/v1" || normalizeBaseURL("https://x/v1/") != "https://x/v1" {
		t.Fatalf("NormalizeBaseURL: %q %q", normalizeBaseURL(""), normalizeBaseURL("https://x/v1/"))
	}
}

func keyRef(name, key string) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

func keySecret(name, allowed string, withAnnotation bool) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Data: map[string][]byte{"k": []byte("sk-" + name + "-value-0123456")}}
	if withAnnotation {
		s.Annotations = map[string]string{evalv1.AnnotationAllowedBaseURLs: allowed}
	}
	return s
}

func TestCheckProviderKeys(t *testing.T) {
	const llmURL = "https://llm.example/v1"
	secrets := []client.Object{
		keySecret("bare", "", false),
		keySecret("other", "https://elsewhere.example/v1", true),
		keySecret("ok", "https://elsewhere.example/v1, "+llmURL+"/", true),
		keySecret("openai", "https://api.openai.com/v1", true),
	}
	cases := []struct {
		name      string
		edit      func(tr *evalv1.Trial)
		reason    string // "" = allowed
		transient bool
		msg       string
	}{
		{"no secrets", func(*evalv1.Trial) {}, "", false, ""},
		{"listed", func(tr *evalv1.Trial) {
			tr.Spec.Agent = evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "m", BaseURL: llmURL, APIKeySecretRef: keyRef("ok", "k")}
		}, "", false, ""},
		{"default base URL listed", func(tr *evalv1.Trial) {
			tr.Spec.Agent = evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "m", APIKeySecretRef: keyRef("openai", "k")}
		}, "", false, ""},
		{"no annotation", func(tr *evalv1.Trial) {
			tr.Spec.Agent = evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "m", BaseURL: llmURL, APIKeySecretRef: keyRef("bare", "k")}
		}, evalv1.ReasonSecretNotAllowed, false,
			"spec.agent.apiKeySecretRef: secret ns/bare may not be sent to https://llm.example/v1: it has no annotation eval.tolokaforge.io/allowed-base-urls listing the base URLs it may be sent to"},
		{"URL not listed", func(tr *evalv1.Trial) {
			tr.Spec.Judge = &evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "j", BaseURL: "https://attacker.example/v1", APIKeySecretRef: keyRef("ok", "k")}
		}, evalv1.ReasonSecretNotAllowed, false,
			`spec.judge.apiKeySecretRef: secret ns/ok may not be sent to https://attacker.example/v1: its annotation eval.tolokaforge.io/allowed-base-urls lists only ["https://elsewhere.example/v1" "https://llm.example/v1"]`},
		{"header Secret not opted in", func(tr *evalv1.Trial) {
			tr.Spec.Agent = evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "m", BaseURL: llmURL, APIKeySecretRef: keyRef("ok", "k"),
				ExtraHeaders: []evalv1.ExtraHeader{{Name: "X-Org", ValueFrom: evalv1.HeaderValueSource{SecretKeyRef: *keyRef("other", "k")}}}}
		}, evalv1.ReasonSecretNotAllowed, false,
			`spec.agent.extraHeaders[X-Org]: secret ns/other may not be sent to https://llm.example/v1: its annotation eval.tolokaforge.io/allowed-base-urls lists only ["https://elsewhere.example/v1"]`},
		{"user simulator", func(tr *evalv1.Trial) {
			tr.Spec.UserSimulator = &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorLLM,
				Model: &evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "u", BaseURL: llmURL, APIKeySecretRef: keyRef("bare", "k")}}
		}, evalv1.ReasonSecretNotAllowed, false,
			"spec.userSimulator.model.apiKeySecretRef: secret ns/bare may not be sent to https://llm.example/v1: it has no annotation eval.tolokaforge.io/allowed-base-urls listing the base URLs it may be sent to"},
		{"missing Secret may appear", func(tr *evalv1.Trial) {
			tr.Spec.Agent = evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "m", BaseURL: llmURL, APIKeySecretRef: keyRef("absent", "k")}
		}, evalv1.ReasonAPIKeyUnavailable, true, `spec.agent.apiKeySecretRef: read secret ns/absent: secrets "absent" not found`},
		{"optional missing Secret", func(tr *evalv1.Trial) {
			r := keyRef("absent", "k")
			r.Optional = ptr.To(true)
			tr.Spec.Agent = evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "m", BaseURL: llmURL, APIKeySecretRef: r}
		}, "", false, ""},
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(secrets...).Build()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := testTrial()
			tr.Namespace = "ns"
			tc.edit(tr)
			ke := checkProviderKeys(context.Background(), c, tr)
			if tc.reason == "" {
				if ke != nil {
					t.Fatalf("refused: %v", ke)
				}
				return
			}
			if ke == nil || ke.Reason != tc.reason || ke.Transient != tc.transient || ke.Error() != tc.msg {
				t.Fatalf("got %#v (%v)\nwant reason %s transient %v msg\n%s", ke, ke, tc.reason, tc.transient, tc.msg)
			}
			if strings.Contains(ke.Error(), "value-0123456") {
				t.Fatalf("a Secret value reached the error: %v", ke)
			}
		})
	}
}

// TestForbiddenSecretNamesTheNamespace stands in for a namespace the install
// did not grant: the API server answers the Secret get with 403.
func TestForbiddenSecretNamesTheNamespace(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, nil)
		},
	}).Build()
	tr := testTrial()
	tr.Namespace = "team-b"
	tr.Spec.Agent = evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "m", APIKeySecretRef: keyRef("llm", "k")}
	ke := checkProviderKeys(context.Background(), c, tr)
	if ke == nil || ke.Reason != evalv1.ReasonNamespaceNotGranted || ke.Transient ||
		!strings.HasPrefix(ke.Error(), "spec.agent.apiKeySecretRef: the manager may not read Secrets in namespace team-b (secret llm: ") {
		t.Fatalf("got %#v (%v)", ke, ke)
	}
}

func TestJudgeUpstream(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		keySecret("judge", "https://judge.example/v1", true), keySecret("bare", "", false)).Build()
	up := JudgeUpstream(c)
	tr := testTrial()
	tr.Namespace = "ns"
	if _, err := up(context.Background(), tr); err == nil || err.Error() != "the trial has no judge model" {
		t.Fatalf("oracle trial: %v", err)
	}
	tr.Spec.Judge = &evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "j1", BaseURL: "https://judge.example/v1/",
		APIKeySecretRef: keyRef("judge", "k")}
	got, err := up(context.Background(), tr)
	if err != nil || got.BaseURL != "https://judge.example/v1" || got.APIKey != "sk-judge-value-0123456" ||
		strings.Join(got.Models, ",") != "j1" {
		t.Fatalf("upstream = %+v, %v", got, err)
	}
	tr.Spec.Judge.APIKeySecretRef = keyRef("bare", "k")
	if _, err := up(context.Background(), tr); err == nil || !strings.HasPrefix(err.Error(),
		"spec.judge.apiKeySecretRef: secret ns/bare may not be sent to https://judge.example/v1") {
		t.Fatalf("not opted in: %v", err)
	}
}
