package controllers

import (
	"context"
	"strings"
	"testing"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/refs/refstest"
)

// TestTrialSecrets: a Trial whose Secret is missing fails its references; one
// whose namespace is not granted ends as a refused key (NamespaceNotGranted,
// final), never as if the Secret were there.
func TestTrialSecrets(t *testing.T) {
	reader := refstest.SecretsReader(t, "team-b")
	tests := []struct {
		secret      string
		wantMissing string // the MissingRef's reason
		wantKey     string // the KeyError's reason
		wantErr     bool
	}{
		{secret: "present"},
		{secret: "absent", wantMissing: evalv1.ReasonSecretNotFound},
		{secret: "denied", wantKey: evalv1.ReasonNamespaceNotGranted},
		{secret: "broken", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.secret, func(t *testing.T) {
			uses := []evalv1.SecretUse{{Field: "spec.agent.apiKeySecretRef", Ref: keyRef(tt.secret, "k")}}
			m, ke, err := trialSecrets(context.Background(), reader, "team-b", uses)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			got := ""
			if m != nil {
				got = m.Reason
			}
			if got != tt.wantMissing {
				t.Errorf("missing = %+v, want reason %q", m, tt.wantMissing)
			}
			if tt.wantKey == "" {
				if ke != nil {
					t.Errorf("key error %v, want none", ke)
				}
				return
			}
			if ke == nil || ke.Reason != tt.wantKey || ke.Transient || !strings.Contains(ke.Error(), "namespace team-b") {
				t.Errorf("key error = %#v, want a final %s naming the namespace", ke, tt.wantKey)
			}
		})
	}
}
