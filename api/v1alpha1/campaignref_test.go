package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestCampaignOf(t *testing.T) {
	owned := func(kind, apiVersion string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "camp", UID: "uid-owner", Controller: ptr.To(true)}}
	}
	byLabel := func(tr *Trial) *Trial {
		tr.Labels = map[string]string{LabelCampaignUID: "uid-label"}
		tr.Annotations = map[string]string{AnnotationCampaignName: "camp-by-label"}
		return tr
	}
	for _, tc := range []struct {
		name     string
		trial    *Trial
		wantName string
		wantUID  types.UID
	}{
		{"owner reference", &Trial{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("Campaign", GroupVersion.String())}}, "camp", "uid-owner"},
		{"another kind's controller", &Trial{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("Job", "batch/v1")}}, "", ""},
		{"another group's Campaign", &Trial{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("Campaign", "other.io/v1")}}, "", ""},
		{"none", &Trial{}, "", ""},
		{"labels on a Trial this manager runs", byLabel(&Trial{}), "", ""},
		{"labels, managedBy multikueue", byLabel(&Trial{Spec: TrialSpec{ManagedBy: ptr.To(ManagedByMultiKueue)}}), "camp-by-label", "uid-label"},
		{"labels, MultiKueue's worker copy", func() *Trial {
			tr := byLabel(&Trial{})
			tr.Labels[LabelMultiKueueOrigin] = "manager"
			return tr
		}(), "camp-by-label", "uid-label"},
		{"multikueue, no uid", func() *Trial {
			tr := byLabel(&Trial{Spec: TrialSpec{ManagedBy: ptr.To(ManagedByMultiKueue)}})
			delete(tr.Labels, LabelCampaignUID)
			return tr
		}(), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, uid := CampaignOf(tc.trial)
			if name != tc.wantName || uid != tc.wantUID {
				t.Errorf("CampaignOf = %q %q, want %q %q", name, uid, tc.wantName, tc.wantUID)
			}
		})
	}
}
