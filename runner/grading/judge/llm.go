package judge

import (
	"context"
	"encoding/json"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/task"
)

// LLMModels builds the judge's models on api/llm, the project's one
// OpenAI-compatible client (its retries, usage accounting and key redaction). base
// is copied per trial with Role "judge" and the trial's key.
func LLMModels(base llm.Options) ModelFactory {
	return func(cfg *task.ModelConfig, apiKey string) (Model, error) {
		o := base
		o.Role = "judge"
		o.APIKey = apiKey
		c, err := llm.New(cfg, o)
		if err != nil {
			return nil, err
		}
		return llmJudge{c: c}, nil
	}
}

type llmJudge struct{ c *llm.Client }

func (m llmJudge) Complete(ctx context.Context, conv []task.Message, tools json.RawMessage) (string, []task.ToolCall, Usage, error) {
	content, calls, u, err := m.c.Complete(ctx, conv, tools)
	return content, calls, u, err
}
