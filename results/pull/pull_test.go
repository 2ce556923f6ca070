package pull

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func campaignTrial(name, agent, taskID, url string) *evalv1.Trial {
	yes := true
	return &evalv1.Trial{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels:          map[string]string{evalv1.LabelCampaign: "eval", evalv1.LabelAgent: agent},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: evalv1.GroupVersion.String(), Kind: "Campaign", Name: "eval", UID: "u", Controller: &yes}}},
		Status: evalv1.TrialStatus{TaskID: taskID, ArtifactsURL: url},
	}
}

// TestPullRefusesBeforeWriting covers what is decided before any store is
// read: which Trials a name means, and whether they may all be written.
func TestPullRefusesBeforeWriting(t *testing.T) {
	camp := &evalv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "eval", UID: "u"}}
	tests := []struct {
		name    string
		objs    []client.Object
		pull    string
		wantErr string
	}{
		{"neither a campaign nor a trial", nil, "nope", `no campaign or trial "nope" in namespace ns; nothing written`},
		{"a trial without artifacts", []client.Object{&evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "solo"}}}, "solo",
			"trial ns/solo has no trial with status.artifactsURL (trials without: solo); nothing written"},
		{"a campaign without trials", []client.Object{camp}, "eval", "campaign ns/eval has no trial with status.artifactsURL (trials without: none); nothing written"},
		{"two trials, one directory", []client.Object{camp,
			campaignTrial("eval-a", "gpt/x", "t", "file:///nowhere/a"), campaignTrial("eval-b", "gpt?x", "t", "file:///nowhere/b")}, "eval",
			// Both agents' names collapse to one path segment.
			"trials eval-a and eval-b would both be written to "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := runtime.NewScheme()
			if err := evalv1.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(tt.objs...).Build()
			out := t.TempDir()
			var w bytes.Buffer
			err := Pull(context.Background(), c, "ns", tt.pull, out, &w)
			if strings.HasSuffix(tt.wantErr, "to ") {
				tt.wantErr += filepath.Join(out, "gpt_x", "trials", "t", "0") + " (same agent, task and index)"
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if entries, _ := os.ReadDir(out); len(entries) > 0 || w.Len() > 0 {
				t.Errorf("wrote %v and said %q before refusing", entries, w.String())
			}
		})
	}
}
