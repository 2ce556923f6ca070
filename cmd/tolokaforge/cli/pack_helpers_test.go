package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	sigyaml "sigs.k8s.io/yaml"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// The upstream task packs the pack commands are tried on.
// fixtures are upstream's packs as the project keeps them (unchanged, with their NOTICE).
const fixtures = "api/task/pack/testdata/tolokaforge"

func fixture(name string) string { return filepath.Join(fixtures, name) }

const minimalTask = `task_id: mini
name: Mini
category: test
description: d
tools:
  agent:
    enabled: [calculator]
`

// writePack writes files (slash paths) into a new pack directory.
func writePack(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	for f, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readStream reads `pack import`'s output the way kubectl does.
func readStream(t *testing.T, stream []byte) (tasks []*evalv1.Task, cms []*corev1.ConfigMap) {
	t.Helper()
	for _, doc := range strings.Split(string(stream), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		js, err := sigyaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("kubectl could not read:\n%s\n%v", doc, err)
		}
		var head struct{ Kind string }
		if err := json.Unmarshal(js, &head); err != nil {
			t.Fatal(err)
		}
		switch head.Kind {
		case "Task":
			tk := &evalv1.Task{}
			if err := json.Unmarshal(js, tk); err != nil {
				t.Fatal(err)
			}
			tasks = append(tasks, tk)
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			if err := json.Unmarshal(js, cm); err != nil {
				t.Fatal(err)
			}
			cms = append(cms, cm)
		default:
			t.Fatalf("unexpected kind %q", head.Kind)
		}
	}
	return tasks, cms
}
