package podsim

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"tolokaforge.io/operator/test/envtest/controlplane"
)

// BenchmarkPodToReady measures create -> Ready -> deleted for in-process pods
// with an HTTP readiness probe, against a baseline that drives the same pod
// through the same API writes by hand (create, status update, delete), so the
// ratio is the simulator's own overhead on this machine.
func BenchmarkPodToReady(b *testing.B) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("KUBEBUILDER_ASSETS is unset")
	}
	env, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	cfg := env.Config
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ready := &inprocRegistry{ready: map[string]bool{}, info: map[string]PodInfo{}, cause: map[string]error{}}
	s, err := New(Config{Selector: "bench=sim", InProcess: map[string]InProcessFunc{"serve": ready.serve}, ProbeInterval: 100 * time.Millisecond}, cfg, logr.Discard())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	pods := client.CoreV1().Pods("default")
	pod := func(name, label string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": label}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "main", Image: "bench", Args: []string{"serve", "--listen=$(POD_IP):7000", "--ready"},
				Env:            []corev1.EnvVar{podIPEnv()},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt(7000)}}},
			}}},
		}
	}
	waitReady := func(name string) {
		for {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err == nil && condition(p, corev1.PodReady) == corev1.ConditionTrue {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	del := func(name string) {
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
			b.Fatal(err)
		}
	}

	b.ResetTimer()
	var simTime, baseTime time.Duration
	writes0 := s.StatusWrites()
	for i := range b.N {
		t0 := time.Now()
		name := fmt.Sprintf("base-%d", i)
		p, err := pods.Create(ctx, pod(name, "base"), metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		now := metav1.Now().Rfc3339Copy()
		p.Status = buildStatus(p, snapshot{phase: containerRunning, podIP: "127.9.0.1", startedAt: now, ready: true}, now)
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitReady(name)
		del(name)
		t1 := time.Now()

		name = fmt.Sprintf("sim-%d", i)
		if _, err := pods.Create(ctx, pod(name, "sim"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitReady(name)
		del(name)
		for s.Running() != 0 {
			time.Sleep(time.Millisecond)
		}
		t2 := time.Now()
		baseTime += t1.Sub(t0)
		simTime += t2.Sub(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(baseTime.Microseconds())/float64(b.N), "baseline-µs/pod")
	b.ReportMetric(float64(simTime.Microseconds())/float64(b.N), "podsim-µs/pod")
	b.ReportMetric(float64(simTime)/float64(baseTime), "podsim/baseline")
	b.ReportMetric(float64(s.StatusWrites()-writes0)/float64(b.N), "status-writes/pod")
}
