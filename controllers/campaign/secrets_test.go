package campaign

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// TestCampaignSecrets: a missing Secret and one the manager may not read
// both hold the Campaign (no Trial is created); a Forbidden read is never
// taken for a Secret that is there.
func TestCampaignSecrets(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "present"}, Data: map[string][]byte{"k": []byte("v")}},
	).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			switch key.Name {
			case "denied":
				return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, errors.New("no grant"))
			case "broken":
				return errors.New("connection refused")
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
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
