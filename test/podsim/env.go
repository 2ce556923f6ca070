package podsim

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// envVar keeps declaration order: exec's environment and later $(VAR)
// references both depend on it.
type envVar struct{ Name, Value string }

// configError is kubelet's CreateContainerConfigError: the pod stays Pending
// with this message until the missing object appears.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// resolveEnv computes a container's environment the way kubelet does: envFrom
// sources first, then env entries in order, each literal value expanded
// against the variables defined before it.
func resolveEnv(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, c *corev1.Container, podIP string) ([]envVar, map[string]string, error) {
	vars := map[string]string{}
	var ordered []envVar
	set := func(name, value string) {
		if _, seen := vars[name]; !seen {
			ordered = append(ordered, envVar{Name: name})
		}
		vars[name] = value
	}
	for i, src := range c.EnvFrom {
		data, err := envFromSource(ctx, cs, pod.Namespace, src)
		if err != nil {
			return nil, nil, fmt.Errorf("container %q envFrom[%d]: %w", c.Name, i, err)
		}
		for k, v := range data {
			set(src.Prefix+k, v)
		}
	}
	for i, ev := range c.Env {
		if ev.ValueFrom == nil {
			set(ev.Name, expand(ev.Value, vars))
			continue
		}
		v, ok, err := envValueFrom(ctx, cs, pod, ev.ValueFrom, podIP)
		if err != nil {
			return nil, nil, fmt.Errorf("container %q env[%d] %s: %w", c.Name, i, ev.Name, err)
		}
		if ok {
			set(ev.Name, v)
		}
	}
	for i := range ordered {
		ordered[i].Value = vars[ordered[i].Name]
	}
	return ordered, vars, nil
}

func envFromSource(ctx context.Context, cs kubernetes.Interface, ns string, src corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case src.ConfigMapRef != nil:
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, src.ConfigMapRef.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && isOptional(src.ConfigMapRef.Optional) {
				return nil, nil
			}
			return nil, refError("configmap", src.ConfigMapRef.Name, err)
		}
		return cm.Data, nil
	case src.SecretRef != nil:
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, src.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && isOptional(src.SecretRef.Optional) {
				return nil, nil
			}
			return nil, refError("secret", src.SecretRef.Name, err)
		}
		out := make(map[string]string, len(s.Data)+len(s.StringData))
		for k, v := range s.Data {
			out[k] = string(v)
		}
		return out, nil
	default:
		return nil, &configError{msg: "envFrom source has neither configMapRef nor secretRef"}
	}
}

// envValueFrom returns ok=false for an optional reference that is absent,
// which kubelet skips rather than setting to "".
func envValueFrom(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, src *corev1.EnvVarSource, podIP string) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := podField(pod, src.FieldRef.FieldPath, podIP)
		return v, err == nil, err
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := cs.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && isOptional(ref.Optional) {
				return "", false, nil
			}
			return "", false, refError("secret", ref.Name, err)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			if isOptional(ref.Optional) {
				return "", false, nil
			}
			return "", false, &configError{msg: fmt.Sprintf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)}
		}
		return string(v), true, nil
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := cs.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && isOptional(ref.Optional) {
				return "", false, nil
			}
			return "", false, refError("configmap", ref.Name, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if isOptional(ref.Optional) {
				return "", false, nil
			}
			return "", false, &configError{msg: fmt.Sprintf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)}
		}
		return v, true, nil
	default:
		return "", false, &configError{msg: "unsupported valueFrom source (podsim resolves fieldRef, secretKeyRef and configMapKeyRef)"}
	}
}

func refError(kind, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return &configError{msg: fmt.Sprintf("%s %q not found", kind, name)}
	}
	return fmt.Errorf("get %s %q: %w", kind, name, err)
}

func isOptional(p *bool) bool { return p != nil && *p }

// podField implements the downward API field paths kubelet supports for env.
func podField(pod *corev1.Pod, path, podIP string) (string, error) {
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return nodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	}
	return "", &configError{msg: fmt.Sprintf("unsupported fieldRef path %q", path)}
}

// subscript parses "prefix['key']".
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}
