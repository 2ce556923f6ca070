package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/gateway"
	"tolokaforge.io/operator/test/fakellm"
)

const providerKey = "sk-provider-real-key-0123456789"

type fixture struct {
	gw    *gateway.Gateway
	srv   *httptest.Server
	llm   *fakellm.Server
	c     client.Client
	token string
	trial *evalv1.Trial
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	llm, err := fakellm.New(fakellm.Config{APIKey: providerKey, Script: []fakellm.Reply{{Content: "PASS"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := llm.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llm.Close() })

	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = evalv1.AddToScheme(scheme)
	tr := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "t1", UID: "uid-1"}}
	tr.Spec.Judge = &evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "judge-1", BaseURL: llm.URL()}
	token, err := gateway.NewToken(types.NamespacedName{Namespace: "team-a", Name: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: gateway.SecretName("t1"),
		CreationTimestamp: metav1.Now(),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: evalv1.GroupVersion.String(), Kind: "Trial", Name: "t1",
			UID: "uid-1", Controller: ptr.To(true)}}},
		Data: map[string][]byte{gateway.TokenKey: []byte(token)}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tr, sec).WithStatusSubresource(tr).Build()
	gw := &gateway.Gateway{
		Trials: c, Secrets: c,
		Upstream: func(_ context.Context, t *evalv1.Trial) (gateway.Upstream, error) {
			return gateway.Upstream{BaseURL: t.Spec.Judge.BaseURL, APIKey: providerKey,
				Headers: map[string]string{"OpenAI-Organization": "org-1"}, Models: []string{t.Spec.Judge.Model}}, nil
		},
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return &fixture{gw: gw, srv: srv, llm: llm, c: c, token: token, trial: tr}
}

func (f *fixture) call(t *testing.T, auth, model string) (int, string) {
	t.Helper()
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"grade this"}]}`
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+gateway.Path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestGatewayForwardsWithTheProviderKey(t *testing.T) {
	f := newFixture(t)
	status, body := f.call(t, "Bearer "+f.token, "judge-1")
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Choices) != 1 || out.Choices[0].Message.Content != "PASS" {
		t.Fatalf("body %s (%v)", body, err)
	}
	reqs := f.llm.Requests()
	if len(reqs) != 1 || reqs[0].Authorization != "Bearer "+providerKey || reqs[0].Model != "judge-1" {
		t.Fatalf("the provider saw %+v, want one judge-1 call with the provider key", reqs)
	}
}

func TestGatewayRefuses(t *testing.T) {
	f := newFixture(t)
	other, _ := gateway.NewToken(types.NamespacedName{Namespace: "team-a", Name: "t1"})
	cases := []struct {
		name, auth, model string
		status            int
		msg               string
	}{
		{"no token", "", "judge-1", 401, "missing bearer token"},
		{"not bearer", "Basic " + f.token, "judge-1", 401, "missing bearer token"},
		{"malformed", "Bearer abc", "judge-1", 401, "malformed token"},
		{"wrong token", "Bearer " + other, "judge-1", 401, "invalid token"},
		{"unknown trial", "Bearer team-a/nope/" + strings.Repeat("0", 64), "judge-1", 401, "invalid token"},
		{"model not allowed", "Bearer " + f.token, "gpt-expensive", 403, `model \"gpt-expensive\" is not allowed for trial team-a/t1 (allowed: judge-1)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.call(t, tc.auth, tc.model)
			if status != tc.status || !strings.Contains(body, tc.msg) {
				t.Fatalf("status %d body %s; want %d with %q", status, body, tc.status, tc.msg)
			}
			if strings.Contains(body, f.token) || strings.Contains(body, providerKey) {
				t.Fatalf("a credential reached the answer: %s", body)
			}
		})
	}
	if n := len(f.llm.Requests()); n != 0 {
		t.Fatalf("refused calls reached the provider %d times", n)
	}
}

func TestGatewayRevocation(t *testing.T) {
	t.Run("trial completed", func(t *testing.T) {
		f := newFixture(t)
		f.trial.Status.Conditions = []metav1.Condition{{Type: evalv1.TrialCompleted, Status: metav1.ConditionTrue,
			Reason: "Passed", LastTransitionTime: metav1.Now()}}
		if err := f.c.Status().Update(context.Background(), f.trial); err != nil {
			t.Fatal(err)
		}
		if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != 401 || !strings.Contains(body, "token revoked: trial team-a/t1 has completed") {
			t.Fatalf("status %d body %s", status, body)
		}
	})
	t.Run("token Secret deleted", func(t *testing.T) {
		f := newFixture(t)
		if err := f.c.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: gateway.SecretName("t1")}}); err != nil {
			t.Fatal(err)
		}
		if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != 401 || !strings.Contains(body, "invalid token") {
			t.Fatalf("status %d body %s", status, body)
		}
	})
	t.Run("token too old", func(t *testing.T) {
		f := newFixture(t)
		f.gw.Now = func() time.Time { return time.Now().Add(gateway.DefaultMaxTokenAge + time.Minute) }
		if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != 401 || !strings.Contains(body, "token expired") {
			t.Fatalf("status %d body %s", status, body)
		}
	})
	t.Run("secret owned by another trial", func(t *testing.T) {
		f := newFixture(t)
		s := &corev1.Secret{}
		if err := f.c.Get(context.Background(), types.NamespacedName{Namespace: "team-a", Name: gateway.SecretName("t1")}, s); err != nil {
			t.Fatal(err)
		}
		s.OwnerReferences[0].UID = "uid-of-an-older-t1"
		if err := f.c.Update(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != 401 || !strings.Contains(body, "invalid token") {
			t.Fatalf("status %d body %s", status, body)
		}
	})
}

func TestSecretNameFitsTheLimit(t *testing.T) {
	if got := gateway.SecretName("t1"); got != "t1-llm-gateway" {
		t.Fatalf("SecretName(t1) = %q", got)
	}
	long := strings.Repeat("a", 250)
	if got := gateway.SecretName(long); len(got) != 253 || got == gateway.SecretName(long+"b") {
		t.Fatalf("long names: %d chars, distinct %v", len(got), got != gateway.SecretName(long+"b"))
	}
}
