// Package refstest is the fake API reader the tests of refs and of its two
// callers (the Trial and the Campaign controllers) share, so each answers
// the same four cases: a Secret with the key, one without it, a Forbidden
// get and a failing one. Test code only.
//
// Imports: the standard library, k8s.io/api, k8s.io/apimachinery, k8s.io/client-go and
// sigs.k8s.io/controller-runtime.
package refstest

import (
	"context"
	"errors"
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
)

// SecretsReader holds Secret "present" (key "k") and "nokey" (no key "k")
// in namespace ns; a get of "denied" is Forbidden and of "broken" fails
// outright.
func SecretsReader(t testing.TB, ns string) client.Reader {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "present"}, Data: map[string][]byte{"k": []byte("v")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nokey"}, Data: map[string][]byte{"other": nil}},
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
}
