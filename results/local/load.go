package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/api/task/pack"
	"tolokaforge.io/operator/api/v1alpha1"
)

// wantTask is what a task path may be, for refusals of what it is not.
const wantTask = "want a TaskDescription JSON, a Task manifest, or a task pack directory (task.yaml)"

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
			return nil, fmt.Errorf("not a task (%s): neither JSON nor YAML: %w", wantTask, err)
		}
		jsonDoc = j
	}
	if jsonDoc[0] != '{' {
		// A text file reads as a YAML string; say what it is, not which Go
		// type it failed to fill.
		return nil, fmt.Errorf("not a task (%s): the document is %s, not an object", wantTask, jsonKind(jsonDoc[0]))
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

// jsonKind names the JSON value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// PackTaskFile is the file that makes a directory a task pack.
const PackTaskFile = "task.yaml"

// LoadPack reads the task pack in dir as `pack import` and `pack validate`
// read it (pack.Convert). The conversion's diagnostics are returned for the
// caller to show, and to refuse on when one drops a grading key.
func LoadPack(dir string, opts pack.Options) (*LoadedTask, []pack.Diagnostic, error) {
	if opts.Describe == nil {
		opts.Describe = Describer("")
	}
	conv, err := pack.Convert(dir, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("task pack %s: %w", dir, err)
	}
	lt := &LoadedTask{Task: conv.Description, InitialUserMessage: conv.InitialUserMessage}
	if conv.MaxTurns != nil {
		lt.MaxTurns = int(*conv.MaxTurns)
	}
	return lt, conv.Diagnostics, nil
}

// FindPacks lists the task packs a directory holds, sorted: the directory
// itself when it has a task.yaml, else every directory below it with one
// (a project's tasks/<id>/, tasks/<category>/<id>/, or a folder of packs).
// A pack's own subdirectories are its files, never packs; hidden directories
// (.git, editors' state) are skipped. A directory with no pack is an error
// naming it.
func FindPacks(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("task directory %s: %w", dir, err)
	}
	if len(ents) == 0 {
		return nil, fmt.Errorf("task directory %s is empty: want a task pack (a directory with task.yaml) or a project of packs (tasks/<id>/task.yaml)", dir)
	}
	return pack.FindTasks(dir)
}

// CheckLocal refuses a terminal task (task.Environment): its agent works in
// the task's own container, which the local stack does not start, and its
// commands never run on this host. The refusal comes before any pod, model
// call or token, and says how to run the task.
func CheckLocal(desc *task.TaskDescription) error {
	if desc == nil || !desc.HasEnvironment() {
		return nil
	}
	what := "image " + desc.Environment.Image
	if desc.Environment.Image == "" && desc.Environment.Build != nil {
		what = "built from " + desc.Environment.Build.Dockerfile
	}
	return fmt.Errorf("task %s runs in its own container (%s), which this machine's local stack does not start, and its commands never run on this host: run it on a cluster: `tolokaforge pack build DIR --registry HOST:PORT -o tasks.yaml`, `kubectl apply -f tasks.yaml`, then a Trial or Campaign naming the Task (docs/terminal-tasks.md)",
		desc.TaskID, what)
}
