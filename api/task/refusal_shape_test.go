package task

import (
	"strings"
	"testing"
)

// TestHashSourcePresence: golden_actions: [] is a declaration (the golden state is
// the initial state, a refusal task) and only an ABSENT golden_actions with no
// expected_hash is "no source"; authoring (a TaskDescription or a grading block:
// pack import, the Task's Valid condition, pack validate) refuses that, the runner
// (a TrialSpec: RegisterTrial) never does and grades it against the initial state.
// The two mixes a refusal-shaped hash leaves to grade time (beside db_probes, beside
// jsonpaths with no hash_weight) are refused at authoring and accepted by the runner.
func TestHashSourcePresence(t *testing.T) {
	const noSource = "state_checks.hash_enabled: true, but neither golden_actions nor expected_hash is declared, so the hash has no source " +
		"to compare the trial's state against; declare golden_actions (the reference solution, replayed at grade time) or " +
		"expected_hash (the digest of the golden stable state), or set hash_enabled: false"
	const noWeight = "state_checks.hash_weight: required when hash_enabled is true and jsonpaths is not empty: the hash verdict and the " +
		"JSONPath score are both real and nothing says how to fold them, so every trial would fail grading after the agent's " +
		"budget is spent; declare state_checks.hash_weight in [0, 1] (the hash verdict's share)"
	const besideProbes = "state_checks.db_probes: db_probes is the sole state source when present; it cannot be declared beside an enabled hash " +
		"(golden_actions: [] grades the hash against the initial state, a second verdict for state_checks with no share between them); " +
		"drop the probes or set hash_enabled: false"
	const probe = `"db_probes":[{"id":"p","query":"$.db.t[*]","expect":{"count":1}}]`
	const path = `"jsonpaths":[{"path":"$.db.t[0].x","equals":1}]`
	for _, c := range []struct {
		name, stateChecks string
		authoring         string // the authoring error, "" for accepted
		runner            string // the runner's error (rooted at task.grading.), "" for accepted
	}{
		{name: "golden_actions: [] alone (a refusal task)", stateChecks: `{"hash_enabled":true,"golden_actions":[]}`},
		{name: "golden_actions absent, no expected_hash", stateChecks: `{"hash_enabled":true}`, authoring: noSource},
		{name: "golden_actions: null reads as absent", stateChecks: `{"hash_enabled":true,"golden_actions":null}`, authoring: noSource},
		{name: "expected_hash alone", stateChecks: `{"hash_enabled":true,"expected_hash":"` + strings.Repeat("ab", 32) + `"}`},
		{name: "golden_actions: [] with jsonpaths and a hash_weight", stateChecks: `{"hash_enabled":true,"golden_actions":[],"hash_weight":0.5,` + path + `}`},
		{name: "golden_actions: [] with jsonpaths and no hash_weight", stateChecks: `{"hash_enabled":true,"golden_actions":[],` + path + `}`, authoring: noWeight},
		{name: "no source with jsonpaths and no hash_weight", stateChecks: `{"hash_enabled":true,` + path + `}`, authoring: noSource},
		{name: "golden_actions: [] beside db_probes", stateChecks: `{"hash_enabled":true,"golden_actions":[],` + probe + `}`, authoring: besideProbes},
		{name: "no source beside db_probes", stateChecks: `{"hash_enabled":true,` + probe + `}`, authoring: noSource},
		{
			name:        "a named golden path with jsonpaths and no hash_weight is refused by both",
			stateChecks: `{"hash_enabled":true,"golden_actions":[{"tool_name":"put"}],` + path + `}`,
			authoring:   noWeight, runner: "task.grading." + noWeight,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := `{"weights":{"state_checks":1},"state_checks":` + c.stateChecks + `}`
			_, err := DecodeGradingConfig([]byte(doc))
			if c.authoring == "" {
				if err != nil {
					t.Fatalf("authoring refused: %v", err)
				}
			} else {
				wantErr(t, err, c.authoring)
			}
			_, err = DecodeTrialSpec(specWith(t, set("task.grading", raw(doc))))
			if c.runner == "" {
				if err != nil {
					t.Fatalf("the runner refused: %v", err)
				}
			} else {
				wantErr(t, err, c.runner)
			}
		})
	}
}

// TestGoldenActionsPresenceSurvivesEncoding: a declared empty golden path travels
// as golden_actions: [] through Encode (the Task's stored description, the trial
// spec), and an absent one stays absent.
func TestGoldenActionsPresenceSurvivesEncoding(t *testing.T) {
	for _, c := range []struct {
		name, stateChecks, want string
		declared                bool
	}{
		{"declared empty", `{"hash_enabled":true,"golden_actions":[]}`, `"state_checks":{"hash_enabled":true,"golden_actions":[]}`, true},
		{"absent", `{"hash_enabled":false}`, `"state_checks":{}`, false},
		{"one action", `{"hash_enabled":true,"golden_actions":[{"tool_name":"put"}]}`, `"golden_actions":[{"tool_name":"put","arguments":{}}]`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := DecodeGradingConfig([]byte(`{"weights":{"state_checks":1},"state_checks":` + c.stateChecks + `}`))
			if err != nil {
				t.Fatal(err)
			}
			b, err := Encode(g)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), c.want) {
				t.Fatalf("encoded %s\nwant it to contain %s", b, c.want)
			}
			back, err := DecodeGradingConfig(b)
			if err != nil {
				t.Fatalf("re-decoding %s: %v", b, err)
			}
			if got := back.StateChecks.GoldenActions != nil; got != c.declared {
				t.Fatalf("after a round trip golden_actions declared = %v, want %v (%s)", got, c.declared, b)
			}
		})
	}
}
