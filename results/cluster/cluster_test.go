package cluster

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func fakeReader(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	s := runtime.NewScheme()
	if err := evalv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func trial(ns, name, campaignLabel string, owner types.UID) *evalv1.Trial {
	t := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if campaignLabel != "" {
		t.Labels = map[string]string{evalv1.LabelCampaign: campaignLabel}
	}
	if owner != "" {
		yes := true
		t.OwnerReferences = []metav1.OwnerReference{{APIVersion: evalv1.GroupVersion.String(), Kind: "Campaign", Name: campaignLabel, UID: owner, Controller: &yes}}
	}
	return t
}

func TestCampaignTrials(t *testing.T) {
	camp := &evalv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "eval", UID: "now"}}
	tests := []struct {
		name   string
		trials []client.Object
		want   []string
	}{
		{"none", nil, nil},
		{"its own, by name", []client.Object{trial("ns", "eval-b", "eval", "now"), trial("ns", "eval-a", "eval", "now")}, []string{"eval-a", "eval-b"}},
		{"an earlier campaign's of the same name is not its", []client.Object{trial("ns", "eval-old", "eval", "before"), trial("ns", "eval-a", "eval", "now")}, []string{"eval-a"}},
		{"labelled but controlled by nobody", []client.Object{trial("ns", "stray", "eval", "")}, nil},
		{"controlled but not labelled", []client.Object{trial("ns", "unlabelled", "", "now")}, nil},
		{"another namespace", []client.Object{trial("other", "eval-a", "eval", "now")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CampaignTrials(context.Background(), fakeReader(t, tt.trials...), camp)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tr := range got {
				names = append(names, tr.Name)
			}
			if !reflect.DeepEqual(names, tt.want) {
				t.Errorf("trials = %v, want %v", names, tt.want)
			}
		})
	}
}

func TestClient(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u, namespace: team}
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	given := fakeReader(t)
	tests := []struct {
		name                  string
		c                     client.Reader
		kubeconfig, namespace string
		wantNS                string
		wantGiven             bool
		wantErr               string
	}{
		// Both given: the kubeconfig is never read, so a missing file is no error.
		{"client and namespace given", given, filepath.Join(dir, "missing"), "mine", "mine", true, ""},
		{"namespace from the context", given, kc, "", "team", true, ""},
		{"client from the kubeconfig", nil, kc, "mine", "mine", false, ""},
		{"missing kubeconfig", nil, filepath.Join(dir, "missing"), "", "", false, "kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ns, err := Client(tt.c, tt.kubeconfig, tt.namespace)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ns != tt.wantNS || c == nil || (c == given) != tt.wantGiven {
				t.Errorf("Client = %T, %q; want namespace %q, given client %v", c, ns, tt.wantNS, tt.wantGiven)
			}
		})
	}
}
