package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// Event actions (events.k8s.io's "what the controller did").
const (
	actionStartAttempt = "StartAttempt"
	actionEndAttempt   = "EndAttempt"
	actionComplete     = "Complete"
)

// eventRecord is one event a plan asks for. Reason is always one of the
// condition reasons of reasons.go (or a terminal phase), so an event and the
// condition it accompanies read the same.
type eventRecord struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Action  string
	Message string
}

func normalEvent(reason, action, msg string) eventRecord {
	return eventRecord{Type: corev1.EventTypeNormal, Reason: reason, Action: action, Message: msg}
}

func warningEvent(reason, action, msg string) eventRecord {
	return eventRecord{Type: corev1.EventTypeWarning, Reason: reason, Action: action, Message: msg}
}

// emit records events; a nil recorder (unit tests) drops them.
func emit(rec events.EventRecorder, obj runtime.Object, evs []eventRecord) {
	if rec == nil {
		return
	}
	for _, e := range evs {
		// The note is passed as an argument, never as the format: messages
		// carry runner text that may contain '%'.
		rec.Eventf(obj, nil, e.Type, e.Reason, e.Action, "%s", truncate(e.Message, 1000))
	}
}
