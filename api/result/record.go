package result

// Record is who ran a trial, as the trial's own files say it
// (trajectory.yaml). A field the writer did not know is empty.
type Record struct {
	// Namespace and Trial name the Trial object ("" outside a cluster).
	Namespace string `json:"namespace,omitempty"`
	Trial     string `json:"trial,omitempty"`
	// Campaign is the Campaign that created the Trial, "" for none.
	Campaign string `json:"campaign,omitempty"`
	// Agent is the agent's name: the Campaign's agent entry, else the
	// provider/model or "oracle".
	Agent string `json:"agent,omitempty"`
}
