package v1alpha1

// QueueName is the Kueue LocalQueue the Trial names (LabelQueueName), or "".
func (t *Trial) QueueName() string {
	return t.Labels[LabelQueueName]
}

// Held reports whether spec.suspend holds the Trial back.
func (t *Trial) Held() bool {
	return t.Spec.Suspend != nil && *t.Spec.Suspend
}
