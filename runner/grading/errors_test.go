package grading

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/task"
)

func ptrTo[T any](v T) *T { return &v }

// afterReset returns a fault rule for a DB service that fails once golden replay has
// reset the trial: the nth request match selects fails (every one when nth is 0), and
// nothing fails once the restore arrives. The rule runs under the middleware's lock.
func afterReset(match func(r *http.Request) bool, nth int) func(r *http.Request) bool {
	reset, n := false, 0
	return func(r *http.Request) bool {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/reset"):
			reset = true
			return false
		case strings.HasSuffix(r.URL.Path, "/restore"):
			reset = false
			return false
		case !reset || !match(r):
			return false
		}
		n++
		return nth == 0 || n == nth
	}
}

func isPatch(r *http.Request) bool { return r.Method == http.MethodPatch }

func isHashRead(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/state/hash")
}

// TestGradeTrialErrorTable exercises every row of the spec's GradeTrial error table
// this package produces (Trial '<id>' not found is the runner's), asserting the error
// text and that the trial's database is byte-identical before and after the call.
func TestGradeTrialErrorTable(t *testing.T) {
	db := newTestDB(t)
	type tc struct {
		name string
		// edit changes the shop task before registration.
		edit func(td *task.TaskDescription)
		// arrange runs after the agent's run, before grading; it may replace the transcript.
		arrange func(t *testing.T, env *testEnv, transcript []byte) []byte
		req     func(r *Request)
		// chatOnly: the agent never called a tool (a task without tables).
		chatOnly bool
		// want is the exact error text, with {id} for the trial id; a trailing "…" makes
		// it a prefix.
		want string
	}
	golden := func(td *task.TaskDescription) {}
	cases := []tc{
		{
			name: "timeline: a recorded call the transcript never asked for",
			arrange: func(t *testing.T, env *testEnv, _ []byte) []byte {
				return wire(t, user("hi"), calls([3]string{"call_1", "list_products", "{}"}), toolResult("call_1", "[]"), assistant("done"))
			},
			want: `Trial '{id}' is not gradeable: TimelineInconsistencyError: recorded call_id "call_2" (tool "get_customer", sequence 1) was never asked for by the transcript (and 2 more)`,
		},
		{
			name: "timeline: a tool result answering a call never declared",
			arrange: func(t *testing.T, env *testEnv, _ []byte) []byte {
				return wire(t, user("hi"), toolResult("call_9", "ok"))
			},
			want: `Trial '{id}' is not gradeable: TimelineInconsistencyError: tool result at message 1 answers call_id "call_9", which no earlier tool_calls entry declares`,
		},
		{
			name: "timeline: a recorded call naming a different tool than its declaration",
			arrange: func(t *testing.T, env *testEnv, _ []byte) []byte {
				return wire(t, user("hi"),
					calls([3]string{"call_1", "list_products", "{}"}, [3]string{"call_2", "get_customer", "{}"}, [3]string{"call_3", "get_customer", "{}"}, [3]string{"call_4", "confirm_payment", "{}"}),
					assistant("done"))
			},
			want: `Trial '{id}' is not gradeable: TimelineInconsistencyError: call_id "call_3": the transcript declares tool "get_customer" (message 1) but the runner recorded tool "place_order" (sequence 2)`,
		},
		{
			name:    "decode: malformed JSON",
			arrange: func(t *testing.T, env *testEnv, _ []byte) []byte { return []byte(`[{"role":"user","content":"hi"}`) },
			want:    `Trial '{id}' is not gradeable: ValueError: llm_messages_json is not valid JSON: …`,
		},
		{
			name: "decode: a tool_calls entry without an id",
			arrange: func(t *testing.T, env *testEnv, _ []byte) []byte {
				return []byte(`[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"list_products","arguments":"{}"}}]}]`)
			},
			want: `Trial '{id}' is not gradeable: ValueError: messages[0].tool_calls[0]: missing "id"`,
		},
		{
			name: "decode: termination_reason outside the enum",
			req:  func(r *Request) { r.TerminationReason = "finished" },
			want: `Trial '{id}' is not gradeable: ValueError: termination_reason: "finished" is not one of agent_done, user_stop, stuck_detected, timeout, max_turns, error, rate_limit, api_error, trial_lost (or empty: none reported)`,
		},
		{
			name: "decode: unknown grading component",
			req:  func(r *Request) { r.Components = []string{"state_checks", "state"} },
			want: `Trial '{id}' is not gradeable: ValueError: grading_components[1]: "state" is not one of state_checks, transcript_rules, trace_checks, llm_judge, custom_checks`,
		},
		{
			name: "hash and JSONPath with no hash_weight",
			edit: func(td *task.TaskDescription) { td.Grading.StateChecks.HashWeight = nil },
			want: `Trial '{id}' is not gradeable: ValueError: state_checks.hash.weight is required when a hash verdict and a JSONPath score are both real (hash_enabled with 7 jsonpaths) and nothing says how to fold them; declare state_checks.hash_weight in [0, 1]`,
		},
		{
			name: "db_probes beside an enabled hash with no source",
			edit: func(td *task.TaskDescription) {
				sc := td.Grading.StateChecks
				sc.GoldenActions, sc.JSONPaths, sc.HashWeight = nil, nil, nil
				sc.DBProbes = []task.DBProbe{{ID: "paid", Query: "$.db.orders[?@.status == 'paid']", Expect: task.ProbeExpect{Count: ptrTo(1)}}}
			},
			want: `Trial '{id}' is not gradeable: ValueError: state_checks.db_probes is the sole state source for a task that declares it, yet this task also declares an enabled hash (state_checks.hash_enabled: true): two verdicts for one state_checks component with no declared share between them; drop the probes or the other source`,
		},
		{
			name: "MissingComponentWeight",
			edit: func(td *task.TaskDescription) { td.Grading.Weights = map[string]float64{"state_checks": 1} },
			want: `Trial '{id}' is not gradeable: MissingComponentWeight: transcript_rules was scored and combine.weights declares no weight for it (weights declares state_checks=1); neither 1.0 nor 0.0 is defensible, so the fold refuses: declare a weight for transcript_rules`,
		},
		{
			name:     "no database: a JSONPath assertion",
			chatOnly: true,
			edit:     func(td *task.TaskDescription) { td.InitialState = nil },
			want:     `Trial '{id}' cannot be graded as authored: state_checks.jsonpaths[0] (path '$.db.orders[0].id') reads the trial's database, but the task's initial_state provisions none (it declares no tables, schemas or unstable fields); either provision the tables it reads in initial_state, or assert on what the trial does hold (a file: path_glob: with contains_ci:)`,
		},
		{
			name:     "no database: hash enabled",
			chatOnly: true,
			edit: func(td *task.TaskDescription) {
				td.InitialState = &task.InitialState{}
				td.Grading.StateChecks.JSONPaths = nil
			},
			want: `Trial '{id}' cannot be graded as authored: state_checks.hash (hash_enabled: true, 2 golden actions) reads the trial's database, but the task's initial_state provisions none (it declares no tables, schemas or unstable fields); either provision the tables the golden actions write in initial_state, or set state_checks.hash_enabled: false`,
		},
		{
			name: "JSONPath rooted where the runner composes nothing",
			edit: func(td *task.TaskDescription) { td.Grading.StateChecks.JSONPaths[2].Path = "$.filesystem['notes.txt']" },
			want: `Trial '{id}' cannot be graded as authored: state_checks.jsonpaths declares path '$.filesystem['notes.txt']', which addresses state the runner's JSONPath grading does not carry (jsonpaths[2] is rooted at filesystem, which only the core engine composes; the runner's root holds db alone). For a file use path_glob: with contains_ci:; for anything else the trial holds, root the path at $.db`,
		},
		{
			name: "UnresolvableGoldenAction",
			edit: func(td *task.TaskDescription) {
				td.AgentTools = append(td.AgentTools, task.ToolSchema{Name: "shop_pay", Description: "x"}, task.ToolSchema{Name: "store_pay", Description: "x"})
				td.Grading.StateChecks.GoldenActions = []task.GoldenAction{
					{ToolName: "place_ordr", Arguments: json.RawMessage(`{}`)},
					{ToolName: "confirm_payment", Arguments: json.RawMessage(`{"order_id":"O-001"}`)},
					{ToolName: "pay", Arguments: json.RawMessage(`{}`)},
					{ToolName: "", Arguments: json.RawMessage(`{}`)},
				}
			},
			want: `Hash grading failed: UnresolvableGoldenAction: golden actions naming no tool the replay can call: ` +
				`action 0 (place_ordr) matches no registered agent tool (neither "place_ordr" nor *_place_ordr); ` +
				`action 2 (pay) matches several registered agent tools (shop_pay, store_pay); action 3 () names no tool at all; ` +
				`registered agent tools: [get_customer, place_order, confirm_payment, list_products, shop_pay, store_pay]`,
		},
		{
			name: "GoldReplayIncomplete: a golden action ends in ERROR",
			edit: func(td *task.TaskDescription) {
				td.Grading.StateChecks.GoldenActions[1].Arguments = json.RawMessage(`{"order_id":"O-002"}`)
			},
			want: `Hash grading failed: GoldReplayIncomplete: action 1 (confirm_payment): status error: Order 'O-002' not found`,
		},
		{
			name: "Hash grading failed: the DB fails a write mid-replay",
			arrange: func(t *testing.T, env *testEnv, tr []byte) []byte {
				// place_order writes twice; the third PATCH is confirm_payment's first.
				db.faults.set(afterReset(isPatch, 3))
				return tr
			},
			want: `Hash grading failed: GoldenReplayError: action 1 (confirm_payment): patch table "customers" of trial "{id}": dbservice: 503 Unavailable: injected fault`,
		},
		{
			name: "Hash grading failed: the DB stops answering reads until restore",
			arrange: func(t *testing.T, env *testEnv, tr []byte) []byte {
				db.faults.set(afterReset(isHashRead, 0))
				return tr
			},
			want: `Hash grading failed: StableHashError: hashing the golden state: get hash of trial "{id}": dbservice: 503 Unavailable: injected fault`,
		},
		{
			name: "Hash grading failed: the golden state cannot be read",
			arrange: func(t *testing.T, env *testEnv, _ []byte) []byte {
				db.faults.set(func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/state/stable") })
				// A mismatching agent, so the golden state is read for the diff.
				return wire(t, user("hi"), calls([3]string{"call_1", "list_products", "{}"}, [3]string{"call_2", "get_customer", "{}"},
					[3]string{"call_3", "place_order", "{}"}, [3]string{"call_4", "confirm_payment", "{}"}), assistant("done"))
			},
			edit: func(td *task.TaskDescription) {
				td.Grading.StateChecks.GoldenActions = td.Grading.StateChecks.GoldenActions[:1]
			},
			want: `Hash grading failed: StableStateError: reading the golden stable state: get stable state of trial "{id}": dbservice: 503 Unavailable: injected fault`,
		},
		{
			name: "Hash grading failed: expected_hash disagrees with the replay",
			edit: func(td *task.TaskDescription) { td.Grading.StateChecks.ExpectedHash = ptrTo(shopInitialDigest) },
			want: `Hash grading failed: ExpectedHashMismatch: state_checks.expected_hash is ` + shopInitialDigest + ` but the golden replay ends in stable state ` + shopGoldenDigest + `; one of them is stale`,
		},
		{
			name: "Hash grading failed: a tool panics during replay",
			arrange: func(t *testing.T, env *testEnv, tr []byte) []byte {
				env.beforeRun = func(_ context.Context, i int, _ string) {
					if i == 1 {
						panic("tool exploded")
					}
				}
				return tr
			},
			want: `Hash grading failed: GoldenReplayPanic: tool exploded`,
		},
		{
			name: "Hash grading failed: the MCP state sync fails",
			arrange: func(t *testing.T, env *testEnv, tr []byte) []byte {
				env.syncErr = errors.New("mcp server gone")
				return tr
			},
			want: `Hash grading failed: StateSyncError: writing the tool servers' tables into the DB service: mcp server gone`,
		},
		{
			name: "Grading error: a DB probe the service fails",
			edit: func(td *task.TaskDescription) {
				sc := td.Grading.StateChecks
				sc.HashEnabled, sc.GoldenActions, sc.JSONPaths, sc.HashWeight = false, nil, nil, nil
				sc.DBProbes = []task.DBProbe{{ID: "paid", Query: "$.db.orders[?@.status == 'paid']", Expect: task.ProbeExpect{Count: ptrTo(1)}}}
			},
			arrange: func(t *testing.T, env *testEnv, tr []byte) []byte {
				db.faults.set(func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/query") })
				return tr
			},
			want: `Grading error: state_checks.db_probes[0] (id "paid"): query "$.db.orders[?@.status == 'paid']": query trial "{id}" with "$.db.orders[?@.status == 'paid']": dbservice: 503 Unavailable: injected fault`,
		},
		{
			name: "Grading error: test_execution",
			edit: func(td *task.TaskDescription) {
				td.Grading.GradingMethod = task.GradingTestExecution
				td.Grading.TestExecution = &task.TestExecution{Command: []string{"true"}}
			},
			want: `Grading error: test_execution: the trial has no work directory to run the verifier in`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			edit := c.edit
			if edit == nil {
				edit = golden
			}
			env := newTrial(t, db, loadShopTask(t, edit))
			var transcript []byte
			if c.chatOnly {
				transcript = wire(t, user("hi"), assistant("hello"))
			} else {
				transcript = agentRun(t, env, goldenPlaceOrderArgs, "O-001", goldenFinal)
			}
			if c.arrange != nil {
				transcript = c.arrange(t, env, transcript)
			}
			req := Request{Transcript: transcript, TerminationReason: "agent_done"}
			if c.req != nil {
				c.req(&req)
			}
			before := hashes(t, db.client, env.id)
			g, err := New().Grade(context.Background(), env, req)
			if err == nil {
				t.Fatalf("Grade succeeded: %v", g)
			}
			if g != nil {
				t.Errorf("a failed grade carries a Grade: %v", g)
			}
			want := strings.ReplaceAll(c.want, "{id}", env.id)
			if p, ok := strings.CutSuffix(want, "…"); ok {
				if !strings.HasPrefix(err.Error(), p) {
					t.Errorf("error:\n got %s\nwant prefix %s", err, p)
				}
			} else if err.Error() != want {
				t.Errorf("error:\n got %s\nwant %s", err, want)
			}
			var ge *Error
			if !errors.As(err, &ge) {
				t.Errorf("error %T is not *grading.Error", err)
			}
			db.faults.set(nil)
			if after := hashes(t, db.client, env.id); after != before {
				t.Errorf("the trial's database changed: %s -> %s", before, after)
			}
		})
	}
}
