package pack

import (
	"reflect"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools/builtin"
)

// A grading.yaml without a combine block keeps every component it declares, at
// the shares Tolokaforge grades it with: its native adapter's {state_checks: 1}
// and its runner's weights.get(name, 1.0) for the rest, pass_threshold 1.0
// (shared/reference/tolokaforge-python-notes.md §5.1 and §5.3).
func TestConvertWithoutCombineKeepsEveryComponent(t *testing.T) {
	const (
		state      = "state_checks: {jsonpaths: [{path: \"$.db.t[0].n\", equals: 1}]}\n"
		transcript = "transcript_rules: {must_contain: [\"6\"]}\n"
		judge      = "llm_judge: {model_ref: judge, rubric: \"Be right.\"}\n"
	)
	cases := []struct {
		name    string
		grading string
		weights map[string]float64
		diag    string
	}{
		{"state only", state, map[string]float64{"state_checks": 1},
			"absent: weighted with state_checks=1 and pass_threshold 1"},
		{"state and transcript", state + transcript, map[string]float64{"state_checks": 1, "transcript_rules": 1},
			"absent: weighted with state_checks=1, transcript_rules=1 and pass_threshold 1"},
		{"every mapped component", state + transcript + judge, map[string]float64{"state_checks": 1, "transcript_rules": 1, "llm_judge": 1},
			"absent: weighted with state_checks=1, transcript_rules=1, llm_judge=1 and pass_threshold 1"},
		{"transcript alone", transcript, map[string]float64{"state_checks": 1, "transcript_rules": 1},
			"absent: weighted with state_checks=1, transcript_rules=1 and pass_threshold 1"},
		// Tolokaforge runs no judge without model_ref, so it has no share either.
		{"judge without model_ref", state + "llm_judge: {rubric: \"Be right.\"}\n", map[string]float64{"state_checks": 1},
			"absent: weighted with state_checks=1 and pass_threshold 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writePack(t, "nocombine", map[string]string{
				"task.yaml":    minimalTask + "grading: grading.yaml\n",
				"grading.yaml": tc.grading,
			})
			c, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
			if err != nil {
				t.Fatal(err)
			}
			g := c.Description.Grading
			if !reflect.DeepEqual(g.Weights, tc.weights) {
				t.Fatalf("weights %v, want %v", g.Weights, tc.weights)
			}
			if g.CombineMethod != task.CombineWeighted || g.PassThreshold == nil || *g.PassThreshold != 1 {
				t.Fatalf("combine_method %q pass_threshold %v", g.CombineMethod, g.PassThreshold)
			}
			// Every configured component carries a share, so the task is gradable.
			for _, name := range g.ConfiguredComponents() {
				if _, ok := g.Weights[name]; !ok {
					t.Fatalf("%s configured without a weight", name)
				}
			}
			var found bool
			for _, d := range c.Diagnostics {
				if d.Path == "combine" {
					found = true
					if !strings.HasPrefix(d.Msg, tc.diag) || d.DropsGrading() {
						t.Fatalf("combine diagnostic %q (drops grading %t), want prefix %q", d.Msg, d.DropsGrading(), tc.diag)
					}
				}
			}
			if !found {
				t.Fatalf("no combine diagnostic in %q", diagStrings(c.Diagnostics))
			}
		})
	}
}

// A combine block is taken as written: the upstream defaults never add a share.
func TestConvertWithCombineAddsNoShare(t *testing.T) {
	dir := writePack(t, "withcombine", map[string]string{
		"task.yaml":    minimalTask + "grading: grading.yaml\n",
		"grading.yaml": "combine: {method: weighted, weights: {state_checks: 0.5}, pass_threshold: 0.5}\nstate_checks: {jsonpaths: [{path: \"$.db.t[0].n\", equals: 1}]}\n",
	})
	c, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	g := c.Description.Grading
	if !reflect.DeepEqual(g.Weights, map[string]float64{"state_checks": 0.5}) || *g.PassThreshold != 0.5 {
		t.Fatalf("weights %v threshold %v", g.Weights, *g.PassThreshold)
	}
	for _, d := range c.Diagnostics {
		if d.Path == "combine" {
			t.Fatalf("unexpected combine diagnostic %q", d.Msg)
		}
	}
}
