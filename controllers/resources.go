package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// emptyDir size limits: the kubelet evicts a pod whose emptyDir grows past
// its limit, so a tool filling the disk ends its own attempt, not the node.
var (
	// tmpSizeLimit bounds each pod's /tmp.
	tmpSizeLimit = resource.MustParse("256Mi")
	// workDirSizeLimit bounds the runner's work dir (task files, MCP server
	// state, verifier outputs).
	workDirSizeLimit = resource.MustParse("2Gi")
)

// defaultResources are each role's requests and limits when the Trial names
// none. Requests are what an attempt needs to start on a busy node; limits
// keep one runaway task (a tool that allocates or forks without end) from
// starving the attempts beside it. The DB service holds one trial's state in
// memory (its own limits cap that well below its memory limit).
func defaultResources(role string) corev1.ResourceRequirements {
	switch role {
	case evalv1.RoleRunner:
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:              resource.MustParse("250m"),
				corev1.ResourceMemory:           resource.MustParse("256Mi"),
				corev1.ResourceEphemeralStorage: resource.MustParse("256Mi"),
			},
			Limits: corev1.ResourceList{
				corev1.ResourceCPU:              resource.MustParse("2"),
				corev1.ResourceMemory:           resource.MustParse("2Gi"),
				corev1.ResourceEphemeralStorage: resource.MustParse("3Gi"),
			},
		}
	default:
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:              resource.MustParse("100m"),
				corev1.ResourceMemory:           resource.MustParse("128Mi"),
				corev1.ResourceEphemeralStorage: resource.MustParse("64Mi"),
			},
			Limits: corev1.ResourceList{
				corev1.ResourceCPU:              resource.MustParse("1"),
				corev1.ResourceMemory:           resource.MustParse("1Gi"),
				corev1.ResourceEphemeralStorage: resource.MustParse("512Mi"),
			},
		}
	}
}

// resourcesFor merges a Trial's override (spec.runner.resources,
// spec.dbService.resources) over the role's defaults resource by resource: a
// Trial that raises only the memory limit keeps the default requests and CPU
// limit. A request raised above a default limit the Trial left alone lifts
// that limit to the request, so the override never yields a pod the API
// server refuses (requests must not exceed limits).
func resourcesFor(role string, override *corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := defaultResources(role)
	if override == nil {
		return out
	}
	for name, q := range override.Requests {
		out.Requests[name] = q.DeepCopy()
	}
	for name, q := range override.Limits {
		out.Limits[name] = q.DeepCopy()
	}
	for name, req := range override.Requests {
		if _, own := override.Limits[name]; own {
			continue
		}
		if lim, ok := out.Limits[name]; ok && req.Cmp(lim) > 0 {
			out.Limits[name] = req.DeepCopy()
		}
	}
	// A limit lowered below a default request the Trial left alone: the
	// request follows it down, for the same reason.
	for name, lim := range override.Limits {
		if _, own := override.Requests[name]; own {
			continue
		}
		if req, ok := out.Requests[name]; ok && req.Cmp(lim) > 0 {
			out.Requests[name] = lim.DeepCopy()
		}
	}
	if len(override.Claims) > 0 {
		out.Claims = append([]corev1.ResourceClaim(nil), override.Claims...)
	}
	return out
}
