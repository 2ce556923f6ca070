package podsim

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func condStatus(st corev1.PodStatus, t corev1.PodConditionType) (corev1.ConditionStatus, string) {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status, c.Reason
		}
	}
	return "", ""
}

func TestBuildStatus(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(5 * time.Second))
	now := metav1.NewTime(start.Add(10 * time.Second))
	pod := &corev1.Pod{
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "runner", Image: "tolokaforge:dev"}}},
		Status: corev1.PodStatus{QOSClass: corev1.PodQOSBestEffort},
	}
	cases := []struct {
		name      string
		snap      snapshot
		phase     corev1.PodPhase
		ready     corev1.ConditionStatus
		reason    string
		container func(corev1.ContainerStatus) bool
	}{
		{"waiting on config", snapshot{phase: containerWaiting, podIP: "127.0.0.9", waitReason: "CreateContainerConfigError", waitMessage: `secret "k" not found`},
			corev1.PodPending, corev1.ConditionFalse, "ContainersNotReady",
			func(c corev1.ContainerStatus) bool {
				return c.State.Waiting != nil && c.State.Waiting.Reason == "CreateContainerConfigError" && c.State.Waiting.Message == `secret "k" not found` && !*c.Started
			}},
		{"running not ready", snapshot{phase: containerRunning, podIP: "127.0.0.9", startedAt: start},
			corev1.PodRunning, corev1.ConditionFalse, "ContainersNotReady",
			func(c corev1.ContainerStatus) bool {
				return c.State.Running != nil && c.State.Running.StartedAt.Equal(&start) && !c.Ready && *c.Started
			}},
		{"running ready", snapshot{phase: containerRunning, podIP: "127.0.0.9", startedAt: start, ready: true},
			corev1.PodRunning, corev1.ConditionTrue, "",
			func(c corev1.ContainerStatus) bool { return c.Ready && c.State.Running != nil }},
		{"succeeded", snapshot{phase: containerTerminated, podIP: "127.0.0.9", startedAt: start, finishedAt: end, exit: exitStatus{code: 0, reason: "Completed"}},
			corev1.PodSucceeded, corev1.ConditionFalse, "PodCompleted",
			func(c corev1.ContainerStatus) bool {
				tm := c.State.Terminated
				return tm != nil && tm.ExitCode == 0 && tm.Reason == "Completed" && tm.FinishedAt.Equal(&end) && !c.Ready
			}},
		{"failed with code", snapshot{phase: containerTerminated, podIP: "127.0.0.9", startedAt: start, finishedAt: end, exit: exitStatus{code: 3, reason: "Error", message: "boom"}},
			corev1.PodFailed, corev1.ConditionFalse, "PodCompleted",
			func(c corev1.ContainerStatus) bool {
				tm := c.State.Terminated
				return tm != nil && tm.ExitCode == 3 && tm.Reason == "Error" && tm.Message == "boom"
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := buildStatus(pod, tc.snap, now)
			if st.Phase != tc.phase {
				t.Fatalf("phase = %s, want %s", st.Phase, tc.phase)
			}
			if st.PodIP != "127.0.0.9" || len(st.PodIPs) != 1 || st.PodIPs[0].IP != "127.0.0.9" || st.HostIP != "127.0.0.1" {
				t.Fatalf("addresses = pod %q %v host %q", st.PodIP, st.PodIPs, st.HostIP)
			}
			if st.QOSClass != corev1.PodQOSBestEffort {
				t.Fatalf("qosClass dropped: %q", st.QOSClass)
			}
			for _, ct := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
				if s, r := condStatus(st, ct); s != tc.ready || r != tc.reason {
					t.Fatalf("%s = %s/%q, want %s/%q", ct, s, r, tc.ready, tc.reason)
				}
			}
			for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized} {
				if s, _ := condStatus(st, ct); s != corev1.ConditionTrue {
					t.Fatalf("%s = %s, want True", ct, s)
				}
			}
			if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].Name != "runner" || st.ContainerStatuses[0].Image != "tolokaforge:dev" {
				t.Fatalf("container statuses = %+v", st.ContainerStatuses)
			}
			if !tc.container(st.ContainerStatuses[0]) {
				t.Fatalf("container status = %+v", st.ContainerStatuses[0])
			}
		})
	}
}

// An unchanged pod must rebuild to an identical status, or every resync
// would cost an API write.
func TestBuildStatusKeepsTransitionTimesWhileConditionsHold(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	snap := snapshot{phase: containerRunning, podIP: "127.0.0.2", startedAt: t0, ready: false}
	pod.Status = buildStatus(pod, snap, t0)

	later := metav1.NewTime(t0.Add(time.Minute))
	again := buildStatus(pod, snap, later)
	for _, c := range again.Conditions {
		if !c.LastTransitionTime.Equal(&t0) {
			t.Fatalf("%s transition time moved to %v without a change", c.Type, c.LastTransitionTime)
		}
	}
	snap.ready = true
	ready := buildStatus(pod, snap, later)
	for _, c := range ready.Conditions {
		moved := c.LastTransitionTime.Equal(&later)
		flipped := c.Type == corev1.PodReady || c.Type == corev1.ContainersReady
		if moved != flipped {
			t.Fatalf("%s transition time = %v; flipped=%v", c.Type, c.LastTransitionTime, flipped)
		}
	}
	if !ready.StartTime.Equal(&t0) {
		t.Fatalf("start time changed to %v", ready.StartTime)
	}
}
