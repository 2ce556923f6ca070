package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

func TestBuildTrialSpecReasoningModelFields(t *testing.T) {
	tr := testTrial()
	ref := func(key string) corev1.SecretKeySelector {
		return corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hdr"}, Key: key}
	}
	tr.Spec.Agent = evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "o-think",
		MaxCompletionTokens: ptr.To[int32](4096), ReasoningEffort: "high",
		ExtraBody:    &apiextensionsv1.JSON{Raw: []byte(`{"verbosity":"low"}`)},
		ExtraHeaders: []evalv1.ExtraHeader{{Name: "OpenAI-Organization", ValueFrom: evalv1.HeaderValueSource{SecretKeyRef: ref("org")}}},
		Timeout:      &metav1.Duration{Duration: 90 * time.Second},
		RateLimit:    &evalv1.RateLimit{RequestsPerMinute: 300, TokensPerMinute: 100000},
		Pricing:      &evalv1.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 4, CachedInputUSDPerMTok: ptr.To(0.25)}}
	a := buildTrialSpec(tr, 1, &task.TaskDescription{TaskID: "t"}, "http://db").Agent
	if a.Temperature != nil || a.MaxTokens != nil || *a.MaxCompletionTokens != 4096 || a.ReasoningEffort != "high" ||
		string(a.ExtraBody) != `{"verbosity":"low"}` || a.RequestTimeoutSeconds != 90 ||
		*a.RateLimit != (task.RateLimit{RequestsPerMinute: 300, TokensPerMinute: 100000}) || *a.Pricing.CachedInputUSDPerMTok != 0.25 {
		t.Fatalf("agent = %+v", a)
	}
	if len(a.ExtraHeadersEnv) != 0 {
		t.Fatalf("header names reached the spec: %v", a.ExtraHeadersEnv)
	}
	if err := a.Validate("agent"); err != nil {
		t.Fatal(err)
	}

	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: tr.Namespace, Name: "hdr",
			Annotations: map[string]string{evalv1.AnnotationAllowedBaseURLs: normalizeBaseURL(tr.Spec.Agent.BaseURL)}}, Data: map[string][]byte{"org": []byte("org-secret-1")}}).Build()
	d := &Driver{APIReader: c}
	got, err := d.headerValues(context.Background(), tr.Namespace, tr.Spec.Agent.ExtraHeaders, tr.Spec.Agent.BaseURL)
	if err != nil || len(got) != 1 || got["OpenAI-Organization"] != "org-secret-1" {
		t.Fatalf("headers = %v, %v", got, err)
	}
	_, err = d.headerValues(context.Background(), tr.Namespace, []evalv1.ExtraHeader{{Name: "X-Team", ValueFrom: evalv1.HeaderValueSource{SecretKeyRef: ref("team")}}}, tr.Spec.Agent.BaseURL)
	if err == nil || err.Error() != `header X-Team: secret `+tr.Namespace+`/hdr has no key "team"` || strings.Contains(err.Error(), "org-secret-1") {
		t.Fatalf("missing key: %v", err)
	}
}

func TestAddUsageCountsCachedTokens(t *testing.T) {
	u := addUsage(nil, &host.AttemptResult{AgentUsage: host.Usage{Calls: 1, PromptTokens: 100, CompletionTokens: 20, ReasoningTokens: 15, CachedTokens: 60, CostUSD: 0.5}})
	u = addUsage(u, &host.AttemptResult{AgentUsage: host.Usage{Calls: 1, PromptTokens: 100, CachedTokens: 40}})
	if u.Agent.CachedTokens != 100 || u.Agent.ReasoningTokens != 15 || u.Agent.PromptTokens != 200 || u.TotalTokens != 220 {
		t.Fatalf("usage = %+v", u)
	}
}
