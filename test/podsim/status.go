package podsim

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	hostIP   = "127.0.0.1"
	nodeName = "podsim"
)

// containerPhase is the simulator's view of the pod's one container.
type containerPhase int

const (
	containerWaiting containerPhase = iota
	containerRunning
	containerTerminated
)

// snapshot is what status is computed from, copied out under the lock so the
// API write happens without it.
type snapshot struct {
	phase       containerPhase
	podIP       string
	containerID string
	waitReason  string
	waitMessage string
	startedAt   metav1.Time
	ready       bool
	exit        exitStatus
	finishedAt  metav1.Time
}

// buildStatus derives the pod status kubelet would report. It starts from the
// current status so fields owned by others (qosClass, foreign conditions) are
// kept, and keeps a condition's lastTransitionTime while its status holds so
// an unchanged pod compares equal and costs no write.
func buildStatus(pod *corev1.Pod, s snapshot, now metav1.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	st.HostIP = hostIP
	st.HostIPs = []corev1.HostIP{{IP: hostIP}}
	if s.podIP != "" {
		st.PodIP = s.podIP
		st.PodIPs = []corev1.PodIP{{IP: s.podIP}}
	}
	if st.StartTime == nil {
		t := s.startedAt
		if t.IsZero() {
			t = now
		}
		st.StartTime = &t
	}
	st.Reason, st.Message = "", ""

	c := pod.Spec.Containers[0]
	cs := corev1.ContainerStatus{
		Name:        c.Name,
		Image:       c.Image,
		ImageID:     "podsim://" + c.Image,
		ContainerID: s.containerID,
	}
	readyReason := "ContainersNotReady"
	switch s.phase {
	case containerWaiting:
		st.Phase = corev1.PodPending
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: s.waitReason, Message: s.waitMessage}
		cs.Started = new(false)
	case containerRunning:
		st.Phase = corev1.PodRunning
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: s.startedAt}
		cs.Ready = s.ready
		cs.Started = new(true)
	case containerTerminated:
		st.Phase = corev1.PodSucceeded
		if s.exit.code != 0 {
			st.Phase = corev1.PodFailed
		}
		cs.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode:    s.exit.code,
			Reason:      s.exit.reason,
			Message:     s.exit.message,
			StartedAt:   s.startedAt,
			FinishedAt:  s.finishedAt,
			ContainerID: s.containerID,
		}
		cs.Started = new(false)
		readyReason = "PodCompleted"
	}
	st.ContainerStatuses = []corev1.ContainerStatus{cs}

	ready := s.phase == containerRunning && s.ready
	setCondition(&st, corev1.PodScheduled, true, "", now)
	setCondition(&st, corev1.PodInitialized, true, "", now)
	reason := ""
	if !ready {
		reason = readyReason
	}
	setCondition(&st, corev1.ContainersReady, ready, reason, now)
	setCondition(&st, corev1.PodReady, ready, reason, now)
	return st
}

func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, ok bool, reason string, now metav1.Time) {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = status, reason, ""
		return
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: now})
}
