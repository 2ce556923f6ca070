package pack

import (
	"strings"
	"testing"

	"tolokaforge.io/operator/runner/tools/builtin"
)

// TestImportRefusalShapedHash: an upstream grading.yaml with hash.enabled and
// golden_actions: [] (a refusal task: the golden state is the initial state)
// imports with the empty golden path declared, on the Task's wire too; an enabled
// hash with golden_actions absent and no expected_state_hash is refused at import.
func TestImportRefusalShapedHash(t *testing.T) {
	for _, c := range []struct {
		name, grading string
		wantErr       string
		wantWire      string
	}{
		{
			name:     "golden_actions: [] imports as a declared empty golden path",
			grading:  "state_checks: {hash: {enabled: true, golden_actions: []}}\n",
			wantWire: `"state_checks":{"hash_enabled":true,"golden_actions":[]}`,
		},
		{
			name:     "golden_actions: [] with jsonpaths and a weight",
			grading:  "state_checks: {hash: {enabled: true, weight: 0.5, golden_actions: []}, jsonpaths: [{path: '$.db.t[0].x', equals: 1}]}\n",
			wantWire: `"golden_actions":[]`,
		},
		{
			name:    "golden_actions absent and no expected_state_hash is refused",
			grading: "state_checks: {hash: {enabled: true}}\n",
			wantErr: "grading.state_checks.hash_enabled: true, but neither golden_actions nor expected_hash is declared",
		},
		{
			name:    "golden_actions: [] with jsonpaths and no weight is refused",
			grading: "state_checks: {hash: {enabled: true, golden_actions: []}, jsonpaths: [{path: '$.db.t[0].x', equals: 1}]}\n",
			wantErr: "grading.state_checks.hash_weight: required when hash_enabled is true and jsonpaths is not empty",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writePack(t, "refusal", map[string]string{"task.yaml": minimalTask + "grading: g.yaml\n", "g.yaml": c.grading})
			conv, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sc := conv.Description.Grading.StateChecks
			if sc == nil || !sc.HashEnabled || sc.GoldenActions == nil || len(sc.GoldenActions) != 0 {
				t.Fatalf("state_checks %+v: want hash_enabled with a declared empty golden path", sc)
			}
			if !strings.Contains(string(conv.Wire), c.wantWire) {
				t.Fatalf("wire %s\nwant it to contain %s", conv.Wire, c.wantWire)
			}
		})
	}
}
