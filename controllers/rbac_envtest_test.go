package controllers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/test/envtest/controlplane"
)

// TestInstallRBACGrantsSecretsOnlyInGrantedNamespaces runs kube-apiserver
// with --authorization-mode=RBAC (envtest's default is AlwaysAllow), binds
// the manager's ClusterRole (config/rbac/role.yaml) and the namespace grant
// (config/namespace-grant) to a user standing for the manager's
// ServiceAccount, and checks what that user may do: read a provider Secret in
// the granted namespace, get nothing in another (the Trial check says
// NamespaceNotGranted), and never list or watch Secrets anywhere.
func TestInstallRBACGrantsSecretsOnlyInGrantedNamespaces(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("needs KUBEBUILDER_ASSETS (kube-apiserver and etcd); `make envtest` builds them")
	}
	env, err := controlplane.Start(controlplane.Options{APIServerFlags: map[string]string{"authorization-mode": "RBAC"}})
	if err != nil {
		t.Fatalf("start control plane: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	admin := env.Config
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	ac, err := client.New(admin, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	const granted, other, user = "team-a", "team-b", "manager-sa"
	for _, ns := range []string{granted, other} {
		must(t, ac.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		must(t, ac.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm",
			Annotations: map[string]string{evalv1.AnnotationAllowedBaseURLs: "https://llm.example/v1"}},
			Data: map[string][]byte{"k": []byte("sk-rbac-0123456789")}}))
	}
	// The install's objects, as written in config/, bound to the user.
	cr := &rbacv1.ClusterRole{}
	readYAML(t, filepath.Join("..", "config", "rbac", "role.yaml"), cr)
	must(t, ac.Create(ctx, cr))
	must(t, ac.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "manager"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}))
	role := &rbacv1.Role{}
	readYAML(t, filepath.Join("..", "config", "namespace-grant", "role.yaml"), role)
	role.Namespace = granted
	must(t, ac.Create(ctx, role))
	rb := &rbacv1.RoleBinding{}
	readYAML(t, filepath.Join("..", "config", "namespace-grant", "role_binding.yaml"), rb)
	rb.Namespace = granted
	rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	must(t, ac.Create(ctx, rb))

	u, err := env.AddUser(ctrlenvtest.User{Name: user}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := client.New(u.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	trial := func(ns string) *evalv1.Trial {
		tr := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t"}}
		tr.Spec.Agent = evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "m", BaseURL: "https://llm.example/v1",
			APIKeySecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "k"}}
		return tr
	}
	if ke := checkProviderKeys(ctx, mc, trial(granted)); ke != nil {
		t.Fatalf("granted namespace refused: %v", ke)
	}
	ke := checkProviderKeys(ctx, mc, trial(other))
	if ke == nil || ke.Reason != evalv1.ReasonNamespaceNotGranted || ke.Transient ||
		!strings.HasPrefix(ke.Error(), "spec.agent.apiKeySecretRef: the manager may not read Secrets in namespace team-b (secret llm: ") {
		t.Fatalf("ungranted namespace: %#v (%v)", ke, ke)
	}
	// A judge without a key Secret still needs the grant, for its token.
	judged := func(ns string) *evalv1.Trial {
		tr := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "j"}}
		tr.Spec.Judge = &evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "judge", BaseURL: "http://local-llm:8000/v1"}
		return tr
	}
	if ke := checkNamespaceGrant(ctx, mc, judged(granted)); ke != nil {
		t.Fatalf("granted namespace, gateway token: %v", ke)
	}
	ke = checkNamespaceGrant(ctx, mc, judged(other))
	if ke == nil || ke.Reason != evalv1.ReasonNamespaceNotGranted || ke.Transient ||
		!strings.HasPrefix(ke.Error(), "namespace team-b is not granted to the manager: it may not manage the attempt credential and gateway token Secrets there (secret j-llm-gateway: ") {
		t.Fatalf("ungranted namespace, gateway token: %#v (%v)", ke, ke)
	}
	// No list or watch, in either namespace: the manager never caches Secrets.
	for _, ns := range []string{granted, other} {
		if err := mc.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
			t.Errorf("list secrets in %s: %v, want Forbidden", ns, err)
		}
	}
	if err := mc.List(ctx, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets cluster-wide: %v, want Forbidden", err)
	}
	// The gateway token Secret: created and deleted in the granted namespace only.
	tok := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: granted, Name: "t-llm-gateway"}, Data: map[string][]byte{"token": []byte("x")}}
	must(t, mc.Create(ctx, tok))
	must(t, mc.Delete(ctx, tok))
	tok2 := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "t-llm-gateway"}}
	if err := mc.Create(ctx, tok2); !apierrors.IsForbidden(err) {
		t.Errorf("create a Secret in %s: %v, want Forbidden", other, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
