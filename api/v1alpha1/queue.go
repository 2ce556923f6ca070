package v1alpha1

// QueueName is the Kueue LocalQueue the Trial names (LabelQueueName), or "".
func (t *Trial) QueueName() string {
	return t.Labels[LabelQueueName]
}

// Suspended reports whether the Trial is held back: spec.suspend, or, while
// it is unset, naming a queue when queued says Kueue's integration runs (the
// Trial waits for its Workload's admission, which sets suspend: false).
func (t *Trial) Suspended(queued bool) bool {
	if t.Spec.Suspend != nil {
		return *t.Spec.Suspend
	}
	return queued && t.QueueName() != ""
}
