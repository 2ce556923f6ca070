package builtin

import (
	"context"
	"encoding/json"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools"
)

func init() {
	register(Builtin{
		Name:        "think",
		Description: "Think out loud about the task. The thought is logged and changes nothing.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"thought":{"type":"string","description":"The thought."}},` +
			`"required":["thought"],"additionalProperties":false}`),
		Category: task.CategoryCompute,
		New:      func(Env) tools.Tool { return toolFunc(thinkTool) },
	})
	register(Builtin{
		Name:        "transfer_to_human_agents",
		Description: "Transfer the customer to a human agent, with a summary of the issue. Use only when the request cannot be handled within policy.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"summary":{"type":"string","description":"A summary of the customer's issue."}},` +
			`"required":["summary"],"additionalProperties":false}`),
		Category: task.CategoryCompute,
		New:      func(Env) tools.Tool { return toolFunc(transferTool) },
	})
}

type thinkArgs struct {
	Thought string `json:"thought"`
}

// thinkTool answers the empty string, as tau-bench's think does: the value of
// the call is the thought in the transcript, not an output.
func thinkTool(_ context.Context, raw json.RawMessage) (string, error) {
	var a thinkArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	return "", nil
}

type transferArgs struct {
	Summary string `json:"summary"`
}

// transferSuccess is tau-bench's answer; transcript rules match on it.
const transferSuccess = "Transfer successful"

func transferTool(_ context.Context, raw json.RawMessage) (string, error) {
	var a transferArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	return transferSuccess, nil
}
