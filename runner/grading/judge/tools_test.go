package judge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// NewTools offers only tools registered category read, refusing any other by name, and
// offers a tool named twice once.
func TestNewToolsOffersOnlyReadTools(t *testing.T) {
	call := func(context.Context, string, json.RawMessage) (task.ToolCallStatus, string, error) {
		return task.ToolCallSuccess, "", nil
	}
	read := func(name string) *runnerpb.ToolSchema {
		return &runnerpb.ToolSchema{Name: name, Category: "read", ParametersJson: `{"type":"object"}`}
	}
	for _, c := range []struct {
		name    string
		schemas []*runnerpb.ToolSchema
		call    CallFunc
		names   []string
		err     string
	}{
		{name: "read tools, one twice", schemas: []*runnerpb.ToolSchema{read("a"), read("b"), read("a")}, call: call, names: []string{"a", "b"}},
		{name: "a write tool", schemas: []*runnerpb.ToolSchema{read("a"), {Name: "w", Category: "write"}}, call: call,
			err: "judge tool w is registered with category write: the judge may call only tools of category read"},
		{name: "no category", schemas: []*runnerpb.ToolSchema{{Name: "x"}}, call: call,
			err: "judge tool x is registered with category (none): the judge may call only tools of category read"},
		{name: "nothing offered", call: call, err: "judge tools: none offered"},
		{name: "no way to run them", schemas: []*runnerpb.ToolSchema{read("a")}, err: "judge tools: no function to run them"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tl, err := NewTools(c.schemas, c.call)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(tl.names, ","); got != strings.Join(c.names, ",") {
				t.Errorf("offered %s, want %v", got, c.names)
			}
			var enc []map[string]any
			if err := json.Unmarshal(tl.encoded, &enc); err != nil || len(enc) != len(c.names) {
				t.Errorf("encoded %s (%v), want %d tools", tl.encoded, err, len(c.names))
			}
		})
	}
}

// A call of a tool not offered runs nothing and tells the judge which tools it has; a
// tool's failure is shown with its status; a fault outside the tool is an error.
func TestToolsRun(t *testing.T) {
	var ran []string
	tl, err := NewTools([]*runnerpb.ToolSchema{{Name: "get", Category: "read"}}, func(_ context.Context, name string, args json.RawMessage) (task.ToolCallStatus, string, error) {
		ran = append(ran, name+string(args))
		switch string(args) {
		case `{"id":"missing"}`:
			return task.ToolCallError, "not found", nil
		case `{"id":"fault"}`:
			return "", "", context.DeadlineExceeded
		}
		return task.ToolCallSuccess, "record", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name, args string) task.ToolCall {
		return task.ToolCall{Function: task.FunctionCall{Name: name, Arguments: args}}
	}
	for _, c := range []struct {
		call  task.ToolCall
		shown string
		err   string
	}{
		{call: mk("put", `{}`), shown: `error: tool "put" is not one of the tools offered to you (get); nothing was run`},
		{call: mk("get", ``), shown: "record"},
		{call: mk("get", `{"id":"missing"}`), shown: "error: not found"},
		{call: mk("get", `{"id":"fault"}`), err: "the judge's call of tool get failed outside the tool: context deadline exceeded"},
	} {
		shown, err := tl.run(context.Background(), c.call)
		if shown != c.shown || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("run(%s %s) = %q, %v; want %q, %q", c.call.Function.Name, c.call.Function.Arguments, shown, err, c.shown, c.err)
		}
	}
	if want := `get{}|get{"id":"missing"}|get{"id":"fault"}`; strings.Join(ran, "|") != want {
		t.Errorf("ran %v, want %s (nothing for the tool not offered; {} for empty arguments)", ran, want)
	}
}
