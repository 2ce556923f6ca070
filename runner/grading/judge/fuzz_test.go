package judge

import (
	"testing"

	"tolokaforge.io/operator/api/task"
)

// FuzzParseJudgeAnswer: whatever a judge answers, parsing never panics, and an
// accepted answer has one result per criterion, in rubric order, every score in [0, 1]
// and the component score in [0, 1].
func FuzzParseJudgeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"criteria":[{"id":"polite","met":true,"score":1,"justification":"x"},{"id":"accurate","met":false,"score":0.4}]}`,
		"```json\n{\"criteria\":[]}\n```",
		`{"criteria":[{"id":"polite","score":1e309}]}`,
		`{"criteria":null}`,
		`[]`, ``, `{`, `{"criteria":[{"id":"polite","met":true,"score":-0}]} x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		results, score, err := parseJudgeAnswer(answer, rubric)
		if err != nil {
			return
		}
		if len(results) != len(rubric) || score < 0 || score > 1 {
			t.Fatalf("accepted %q: results %v score %v", answer, results, score)
		}
		for i, r := range results {
			if r.Id != rubric[i].ID || r.Score < 0 || r.Score > 1 {
				t.Fatalf("accepted %q: results[%d] = %v", answer, i, r)
			}
			if rubric[i].Kind == task.CriterionBinary && r.Score != 0 && r.Score != 1 {
				t.Fatalf("accepted %q: binary %v", answer, r)
			}
		}
	})
}
