package podsim

import "context"

// PodInfo describes the simulated pod an in-process container runs as.
// In-process functions share the test process environment, so this is how
// they see what a subprocess would find in os.Environ.
type PodInfo struct {
	Namespace, Name, UID, IP string
	// Env is the container's resolved environment (env and envFrom).
	Env map[string]string
}

type podInfoKey struct{}

// PodFromContext returns the pod an in-process container was started for.
func PodFromContext(ctx context.Context) (PodInfo, bool) {
	pi, ok := ctx.Value(podInfoKey{}).(PodInfo)
	return pi, ok
}

func withPodInfo(ctx context.Context, pi PodInfo) context.Context {
	return context.WithValue(ctx, podInfoKey{}, pi)
}
