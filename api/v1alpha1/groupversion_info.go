// Package v1alpha1 contains the eval.tolokaforge.io/v1alpha1 API: Task, Trial and
// Campaign.
//
// Imports: the standard library, k8s.io/api, k8s.io/apiextensions-apiserver and
// k8s.io/apimachinery.
//
// +kubebuilder:object:generate=true
// +groupName=eval.tolokaforge.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "eval.tolokaforge.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds with a runtime.Scheme. It is
	// apimachinery's, so importing the API pulls in no controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Task{}, &TaskList{},
		&Trial{}, &TrialList{},
		&Campaign{}, &CampaignList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
