package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/api/v1alpha1"
)

// LoadedTask is what a task file provides.
type LoadedTask struct {
	Task               *task.TaskDescription
	InitialUserMessage string
	// MaxTurns is the manifest's spec.maxTurns (0: none).
	MaxTurns int
}

// LoadTask reads a TaskDescription JSON document, or a Task manifest (YAML
// or JSON, kind Task, apiVersion eval.tolokaforge.io/v1alpha1) whose
// spec.description is one. A JSON TaskDescription is decoded from its own
// bytes so number literals keep their int/float identity; a manifest goes
// through the same YAML-to-JSON conversion kubectl applies.
func LoadTask(path string) (*LoadedTask, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read task %s: %w", path, err)
	}
	lt, err := parseTask(data)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", path, err)
	}
	return lt, nil
}

func parseTask(data []byte) (*LoadedTask, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("empty file")
	}
	jsonDoc := trimmed
	if trimmed[0] != '{' {
		j, err := yaml.YAMLToJSON(trimmed)
		if err != nil {
			return nil, fmt.Errorf("neither JSON nor YAML: %w", err)
		}
		jsonDoc = j
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(jsonDoc, &head); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if head.APIVersion == "" && head.Kind == "" {
		t, err := task.DecodeTaskDescription(jsonDoc)
		if err != nil {
			return nil, fmt.Errorf("TaskDescription: %w", err)
		}
		return &LoadedTask{Task: t}, nil
	}
	want := v1alpha1.GroupVersion.String()
	if head.Kind != "Task" || head.APIVersion != want {
		return nil, fmt.Errorf("kind %q apiVersion %q: want kind Task, apiVersion %s (or a bare TaskDescription)", head.Kind, head.APIVersion, want)
	}
	var m v1alpha1.Task
	dec := json.NewDecoder(bytes.NewReader(jsonDoc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("task manifest: %w", err)
	}
	if m.Spec.InitialStateFrom != nil {
		return nil, fmt.Errorf("task %q: spec.initialStateFrom reads a ConfigMap, which needs a cluster; inline initial_state in spec.description for trial run", m.Name)
	}
	if len(m.Spec.Description.Raw) == 0 {
		return nil, fmt.Errorf("task %q: spec.description is missing", m.Name)
	}
	t, err := task.DecodeTaskDescription(m.Spec.Description.Raw)
	if err != nil {
		return nil, fmt.Errorf("task %q: spec.description: %w", m.Name, err)
	}
	lt := &LoadedTask{Task: t, InitialUserMessage: m.Spec.InitialUserMessage}
	if m.Spec.MaxTurns != nil {
		lt.MaxTurns = int(*m.Spec.MaxTurns)
	}
	return lt, nil
}
