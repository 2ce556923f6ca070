package campaign

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/refs/refstest"
)

// TestCampaignSecrets: a missing Secret and one the manager may not read
// both hold the Campaign (no Trial is created); a Forbidden read is never
// taken for a Secret that is there.
func TestCampaignSecrets(t *testing.T) {
	reader := refstest.SecretsReader(t, "ns")
	const field = "spec.agents[a].model.apiKeySecretRef"
	tests := []struct {
		secret     string
		wantMsg    string // a prefix of the held message; "" when not held
		wantReason string
		wantErr    bool
	}{
		{secret: "present"},
		{secret: "absent", wantMsg: "Secret ns/absent not found (" + field + ")", wantReason: evalv1.ReasonSecretNotFound},
		{secret: "denied", wantMsg: "the manager may not read Secrets in namespace ns (Secret denied, " + field + ")", wantReason: evalv1.ReasonNamespaceNotGranted},
		{secret: "broken", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.secret, func(t *testing.T) {
			uses := []evalv1.SecretUse{{Field: field, Ref: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: tt.secret}, Key: "k"}}}
			msg, reason, err := campaignSecrets(context.Background(), reader, "ns", uses)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if reason != tt.wantReason || !strings.HasPrefix(msg, tt.wantMsg) || (tt.wantMsg == "") != (msg == "") {
				t.Fatalf("held by %q (%s), want %q (%s)", msg, reason, tt.wantMsg, tt.wantReason)
			}
			if msg == "" {
				return
			}
			// What the plan makes of it: no Trial, and a condition saying why.
			w := &World{Campaign: campaign(1, 10, "a"), Tasks: []string{"t"}, Now: now, MissingRef: msg, MissingRefReason: reason, RefsChecked: true}
			p := w.Plan()
			if len(p.Creates) != 0 {
				t.Errorf("creates %v while held", names(p.Creates))
			}
			wantCond(t, &p.Status, evalv1.CampaignReferencesResolved, metav1.ConditionFalse, reason)
			until := "; no Trial is created until it exists"
			if reason == evalv1.ReasonNamespaceNotGranted {
				until = "; no Trial is created until the namespace is granted"
			}
			if got := cond(&p.Status, evalv1.CampaignReferencesResolved).Message; got != msg+until {
				t.Errorf("condition message %q", got)
			}
		})
	}
}
