package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// How a Campaign's MultiKueue Trials name it. Such a Trial carries no owner
// reference: Kueue v0.17.0's MultiKueue adapter for external frameworks
// copies a Trial's whole metadata into the worker cluster, owner references
// included, and the worker's garbage collector deletes an object whose
// owners are all missing there (a Campaign's UID never exists in a worker).
// The Campaign deletes such Trials itself (FinalizerCampaignTrials).
const (
	// LabelCampaignUID is the UID of the Campaign that made the Trial.
	LabelCampaignUID = "eval.tolokaforge.io/campaign-uid"
	// AnnotationCampaignName is its full name (LabelCampaign may be shortened).
	AnnotationCampaignName = "eval.tolokaforge.io/campaign-name"
	// FinalizerCampaignTrials holds a Campaign whose Trials carry no owner
	// reference until the Campaign controller has deleted them.
	FinalizerCampaignTrials = "eval.tolokaforge.io/multikueue-trials"
	// LabelMultiKueueOrigin is the label MultiKueue puts on its worker copy
	// (kueue.x-k8s.io/multikueue-origin).
	LabelMultiKueueOrigin = "kueue.x-k8s.io/multikueue-origin"
)

// OwnedByReference reports whether a Campaign whose Trials have managedBy
// trialManagedBy owns them by owner reference (false: by LabelCampaignUID).
func OwnedByReference(trialManagedBy *string) bool {
	return trialManagedBy == nil || *trialManagedBy != ManagedByMultiKueue
}

// CampaignOf names the Campaign t belongs to ("", "" for none): its
// controlling owner, or, for a MultiKueue Trial (spec.managedBy in the
// manager cluster, MultiKueue's origin label on the worker copy), the
// Campaign its label and annotation name.
func CampaignOf(t *Trial) (name string, uid types.UID) {
	if ref := metav1.GetControllerOf(t); ref != nil {
		if ref.Kind == "Campaign" && ref.APIVersion == GroupVersion.String() {
			return ref.Name, ref.UID
		}
		return "", ""
	}
	multiKueue := (t.Spec.ManagedBy != nil && *t.Spec.ManagedBy == ManagedByMultiKueue) || t.Labels[LabelMultiKueueOrigin] != ""
	name, uid = t.Annotations[AnnotationCampaignName], types.UID(t.Labels[LabelCampaignUID])
	if !multiKueue || name == "" || uid == "" {
		return "", ""
	}
	return name, uid
}
