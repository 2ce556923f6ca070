package runner_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading"
)

// userTools delete a user and add one: an agent that deletes a user and adds it
// back leaves the dict as it was, the record last in the list.
const userTools = `
class DeleteUser:
    @staticmethod
    def invoke(data, user_id):
        del data["users"][user_id]
        return "deleted"


class AddUser:
    @staticmethod
    def invoke(data, user_id, user):
        data["users"][user_id] = user
        return "added"
`

// TestDictTableOrderIsNotState: a refusal-shaped task (the hash graded against the
// initial state) whose agent deleted a user and added it back unchanged still
// passes: the author's dict is equal, though the DB service now holds that record
// last. Adding it back with another city fails it.
func TestDictTableOrderIsNotState(t *testing.T) {
	needPython(t)
	h := startRunner(t, nil, withPython(), withGrader(grading.New()))
	for _, c := range []struct {
		name, args string
		score      float64
		reasons    string
	}{
		{"added back unchanged", `{"user_id":"noah_brown_6181","user":{"name":"Noah","address":{"city":"Austin"}}}`, 1, "State: hash match"},
		{"added back moved", `{"user_id":"noah_brown_6181","user":{"name":"Noah","address":{"city":"Denver"}}}`, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			source := func(class string) obj {
				return obj{"toolset": "retail", "module_path": "retail_tools.users", "class_name": class, "invocation_style": "tau_sync",
					"extra": obj{"dict_tables": obj{"users": task.DictKeyField}}}
			}
			users := []any{
				obj{task.DictKeyField: "noah_brown_6181", "name": "Noah", "address": obj{"city": "Austin"}},
				obj{task.DictKeyField: "mia_li_3668", "name": "Mia", "address": obj{"city": "Boston"}},
			}
			doc := baseTask([]any{obj{"name": "delete_user", "description": "", "source": source("DeleteUser")},
				obj{"name": "add_user", "description": "", "source": source("AddUser")}}, nil, obj{"users": users})
			doc["initial_state"].(obj)["schemas"] = []any{obj{"table_name": "users", "primary_key": task.DictKeyField}}
			doc["tool_artifacts"] = obj{"retail_tools/__init__.py": "",
				"retail_tools/users.py": base64.StdEncoding.EncodeToString([]byte(userTools))}
			doc["grading"] = obj{"weights": obj{"state_checks": 1}, "state_checks": obj{"hash_enabled": true, "golden_actions": []any{}}}
			id := "dict-order-" + map[bool]string{true: "same", false: "moved"}[c.score == 1]
			h.mustRegister(t, id, doc)
			h.mustExec(t, id, call{tool: "delete_user", args: `{"user_id":"noah_brown_6181"}`, callID: "c1"})
			h.mustExec(t, id, call{tool: "add_user", args: c.args, callID: "c2"})

			// The DB service holds noah last now: the list order moved.
			st := h.state(t, id, true, "users")
			var data map[string][]map[string]any
			if err := json.Unmarshal([]byte(st.GetStateJson()), &data); err != nil {
				t.Fatal(err)
			}
			if u := data["users"]; len(u) != 2 || u[1][task.DictKeyField] != "noah_brown_6181" {
				t.Fatalf("users as held: %v", u)
			}
			r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: id, TerminationReason: "agent_done"})
			if !r.GetSuccess() {
				t.Fatal(r.GetError())
			}
			g := r.GetGrade()
			if g.GetComponents().GetStateChecks() != c.score || (c.reasons != "" && g.GetReasons() != c.reasons) {
				t.Fatalf("grade = %v, want state_checks %v (%s)", g, c.score, c.reasons)
			}
		})
	}
}
