package judge

import (
	"strings"
	"testing"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/task"
)

// The interface is satisfied by the real client's adapter, not only by tests.
var _ Model = llmJudge{}

func TestLLMModelsRefusesABadConfig(t *testing.T) {
	_, err := LLMModels(llm.Options{})(&task.ModelConfig{Provider: task.ProviderOpenAI}, "")
	if err == nil || !strings.Contains(err.Error(), "judge model: model is empty") {
		t.Fatalf("err = %v", err)
	}
}
