package podsim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// mountSecrets writes the container's Secret volumes under dir, the way the
// kubelet projects them (the whole Secret, or only the listed items, one
// file per key), and returns each mount path with its directory. A test
// process cannot create the pod's absolute mount paths, so the container's
// arguments are rewritten to the returned directories (rewriteMounts).
// A missing Secret that is not optional is a configError: the kubelet keeps
// the pod waiting until it appears.
func mountSecrets(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, c *corev1.Container, dir string) (map[string]string, error) {
	vols := map[string]*corev1.SecretVolumeSource{}
	for i := range pod.Spec.Volumes {
		if s := pod.Spec.Volumes[i].Secret; s != nil {
			vols[pod.Spec.Volumes[i].Name] = s
		}
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		src := vols[m.Name]
		if src == nil {
			continue
		}
		s, err := cs.CoreV1().Secrets(pod.Namespace).Get(ctx, src.SecretName, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && isOptional(src.Optional) {
				continue
			}
			return nil, refError("secret", src.SecretName, err)
		}
		target := filepath.Join(dir, "volumes", m.Name)
		if err := os.MkdirAll(target, 0o700); err != nil {
			return nil, fmt.Errorf("mount secret %s: %w", src.SecretName, err)
		}
		files := map[string][]byte{}
		if len(src.Items) == 0 {
			for k, v := range s.Data {
				files[k] = v
			}
		}
		for _, it := range src.Items {
			v, ok := s.Data[it.Key]
			if !ok {
				if isOptional(src.Optional) {
					continue
				}
				return nil, &configError{msg: fmt.Sprintf("couldn't find key %s in Secret %s/%s", it.Key, pod.Namespace, src.SecretName)}
			}
			files[it.Path] = v
		}
		for name, v := range files {
			p := filepath.Join(target, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return nil, fmt.Errorf("mount secret %s: %w", src.SecretName, err)
			}
			if err := os.WriteFile(p, v, 0o400); err != nil {
				return nil, fmt.Errorf("mount secret %s: %w", src.SecretName, err)
			}
		}
		mounts[m.MountPath] = target
	}
	return mounts, nil
}

// rewriteMounts replaces a mount path at the start of an argument or after
// its '=' with the directory the simulator wrote (longest path first).
func rewriteMounts(argv []string, mounts map[string]string) []string {
	if len(mounts) == 0 {
		return argv
	}
	paths := make([]string, 0, len(mounts))
	for p := range mounts {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = a
		prefix, val := "", a
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") {
			prefix, val = k+"=", v
		}
		for _, p := range paths {
			if val == p || strings.HasPrefix(val, p+"/") {
				out[i] = prefix + mounts[p] + strings.TrimPrefix(val, p)
				break
			}
		}
	}
	return out
}

// mountVolumes materializes the container's Secret volumes in a fresh
// directory ("" when it mounts none), removed with the pod.
func (s *Simulator) mountVolumes(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (string, map[string]string, error) {
	secret := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			secret[v.Name] = true
		}
	}
	any := false
	for _, m := range c.VolumeMounts {
		any = any || secret[m.Name]
	}
	if !any {
		return "", nil, nil
	}
	dir, err := os.MkdirTemp(s.cfg.WorkDir, "podsim-vol-"+pod.Namespace+"-"+pod.Name+"-")
	if err != nil {
		return "", nil, fmt.Errorf("volume dir: %w", err)
	}
	mounts, err := mountSecrets(ctx, s.cs, pod, c, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, mounts, nil
}
