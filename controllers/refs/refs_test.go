package refs

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/refs/refstest"
)

// secretsReader holds Secret "present" (key "k") and "nokey" in ns; a get
// of "denied" is Forbidden and of "broken" fails outright.
func secretsReader(t *testing.T) client.Reader {
	t.Helper()
	return refstest.SecretsReader(t, "ns")
}

func use(name string, optional bool) evalv1.SecretUse {
	return evalv1.SecretUse{Field: "spec.agent.apiKeySecretRef", Ref: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k", Optional: &optional}}
}

func TestMissingSecret(t *testing.T) {
	tests := []struct {
		name     string
		uses     []evalv1.SecretUse
		want     *MissingRef
		wantText string
		wantErr  string
	}{
		{"found", []evalv1.SecretUse{use("present", false)}, nil, "", ""},
		{"nothing referred to", nil, nil, "", ""},
		{"not found", []evalv1.SecretUse{use("present", false), use("absent", false)},
			&MissingRef{Reason: evalv1.ReasonSecretNotFound, Kind: "Secret", Namespace: "ns", Name: "absent", Field: "spec.agent.apiKeySecretRef"},
			"Secret ns/absent not found (spec.agent.apiKeySecretRef)", ""},
		{"key missing", []evalv1.SecretUse{use("nokey", false)},
			&MissingRef{Reason: evalv1.ReasonSecretNotFound, Kind: "Secret", Namespace: "ns", Name: "nokey", Key: "k", Field: "spec.agent.apiKeySecretRef"},
			`Secret ns/nokey has no key "k" (spec.agent.apiKeySecretRef)`, ""},
		{"optional ones are not read", []evalv1.SecretUse{use("absent", true), use("denied", true), use("broken", true)}, nil, "", ""},
		// Forbidden is not "present": the namespace is not granted.
		{"forbidden", []evalv1.SecretUse{use("denied", false)},
			&MissingRef{Reason: evalv1.ReasonNamespaceNotGranted, Kind: "Secret", Namespace: "ns", Name: "denied", Field: "spec.agent.apiKeySecretRef"},
			"the manager may not read Secrets in namespace ns (Secret denied, spec.agent.apiKeySecretRef); the install grants it per namespace: helm value trialNamespaces or config/namespace-grant", ""},
		{"other error", []evalv1.SecretUse{use("broken", false)}, nil, "", "read secret ns/broken (spec.agent.apiKeySecretRef): connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MissingSecret(context.Background(), secretsReader(t), "ns", tt.uses)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || got != nil {
					t.Fatalf("got %+v, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if got != nil && got.String() != tt.wantText {
				t.Errorf("String() = %q, want %q", got.String(), tt.wantText)
			}
		})
	}
}
