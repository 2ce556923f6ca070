package kueueenv

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Quota is a ClusterQueue's nominal quota of one flavor.
type Quota struct {
	CPU, Memory, EphemeralStorage string
	// Pods, when set, bounds the number of pods too (Kueue counts each pod
	// set's count against it).
	Pods string
}

// ResourceFlavor is a flavor with no node labels (envtest has no nodes).
func ResourceFlavor(name string) *kueue.ResourceFlavor {
	return &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// ClusterQueue admits from every namespace into flavor with quota q; lower
// priority workloads are preempted for higher ones within it.
func ClusterQueue(name, flavor string, q Quota) *kueue.ClusterQueue {
	cq := &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			Preemption:        &kueue.ClusterQueuePreemption{WithinClusterQueue: kueue.PreemptionPolicyLowerPriority},
		},
	}
	SetQuota(cq, flavor, q)
	return cq
}

// SetQuota replaces cq's resource groups with one flavor of quota q.
func SetQuota(cq *kueue.ClusterQueue, flavor string, q Quota) {
	covered := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
	quotas := []kueue.ResourceQuota{
		{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse(q.CPU)},
		{Name: corev1.ResourceMemory, NominalQuota: resource.MustParse(q.Memory)},
		{Name: corev1.ResourceEphemeralStorage, NominalQuota: resource.MustParse(q.EphemeralStorage)},
	}
	if q.Pods != "" {
		covered = append(covered, corev1.ResourcePods)
		quotas = append(quotas, kueue.ResourceQuota{Name: corev1.ResourcePods, NominalQuota: resource.MustParse(q.Pods)})
	}
	cq.Spec.ResourceGroups = []kueue.ResourceGroup{{
		CoveredResources: covered,
		Flavors:          []kueue.FlavorQuotas{{Name: kueue.ResourceFlavorReference(flavor), Resources: quotas}},
	}}
}

// LocalQueue is namespace's queue name into ClusterQueue cq.
func LocalQueue(namespace, name, cq string) *kueue.LocalQueue {
	return &kueue.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq)},
	}
}
