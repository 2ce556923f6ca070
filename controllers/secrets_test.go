package controllers

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

// TestTrialSecrets: a Trial whose Secret is missing fails its references; one
// whose namespace is not granted ends as a refused key (NamespaceNotGranted,
// final), never as if the Secret were there.
func TestTrialSecrets(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "present"}, Data: map[string][]byte{"k": []byte("v")}},
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
