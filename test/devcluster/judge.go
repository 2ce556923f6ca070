package devcluster

import (
	"encoding/json"
	"fmt"
	"io"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/test/fakellm"
)

// StandInJudge is pack validate's judge, in the dev build, when no judge model is
// configured: the fake provider (test/fakellm) served in-process on loopback,
// answering each task's rubric with every criterion met. The judge's real path runs
// all the same (the runner's client, the prompt, the answer validated against the
// criteria, the fold), so a judge block that cannot grade fails validation; the
// score says nothing about the transcript. It lives here so the dev build reaches
// into test/ through this package alone.
type StandInJudge struct {
	srv  *fakellm.Server
	diag io.Writer
	n    int
}

// NewStandInJudge starts the fake provider; diag receives a note per judged task.
func NewStandInJudge(diag io.Writer) (*StandInJudge, error) {
	srv, err := fakellm.New(fakellm.Config{})
	if err != nil {
		return nil, fmt.Errorf("stand-in judge: %w", err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("stand-in judge: %w", err)
	}
	return &StandInJudge{srv: srv, diag: diag}, nil
}

// For queues one answer for desc's rubric under a model name of its own and returns
// the judge config that reaches it.
func (j *StandInJudge) For(desc *task.TaskDescription) (*task.ModelConfig, error) {
	j.n++
	model := fmt.Sprintf("stand-in-judge-%d", j.n)
	type verdict struct {
		ID            string  `json:"id"`
		Met           bool    `json:"met"`
		Score         float64 `json:"score"`
		Justification string  `json:"justification"`
	}
	var answer struct {
		Criteria []verdict `json:"criteria"`
	}
	answer.Criteria = []verdict{}
	for _, c := range desc.Grading.LLMJudge.Rubric.Criteria {
		answer.Criteria = append(answer.Criteria, verdict{ID: c.ID, Met: true, Score: 1, Justification: "pack validate's stand-in judge meets every criterion"})
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return nil, err
	}
	if err := j.srv.Enqueue(model, fakellm.Reply{Content: string(b)}); err != nil {
		return nil, err
	}
	fmt.Fprintf(j.diag, "%s: llm_judge answered by the in-process stand-in judge (no --model-config judge): it proves the judge block grades, not that the transcript meets the rubric\n", desc.TaskID)
	return &task.ModelConfig{Provider: task.ProviderOpenAI, Model: model, BaseURL: j.srv.URL()}, nil
}

// Close stops the fake provider.
func (j *StandInJudge) Close() error { return j.srv.Close() }
