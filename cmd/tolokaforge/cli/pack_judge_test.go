package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tolokaforge.io/operator/test/fakellm"
)

// judgedShop is shop_orders_02 with an upstream llm_judge (model_ref and a free-text
// rubric) weighted beside the other components.
func judgedShop(t *testing.T) string {
	t.Helper()
	return packWithGrading(t, "judged_shop", func(g string) string {
		g = strings.Replace(g, "    transcript_rules: 0.30  # Tool call sequence is a secondary signal\n",
			"    transcript_rules: 0.30  # Tool call sequence is a secondary signal\n    llm_judge: 0.2\n", 1)
		return g + "\nllm_judge:\n  model_ref: judge\n  rubric: \"The agent places and pays the order and reports the balance.\"\n"
	})
}

// A configured judge that cannot grade (it answers outside the rubric) fails
// validation, and the line names llm_judge.
func TestValidateCommandFailsAJudgeThatCannotGrade(t *testing.T) {
	if testing.Short() {
		t.Skip("runs trials")
	}
	const key = "sk-validate-judge"
	f, err := fakellm.New(fakellm.Config{APIKey: key, Scripts: map[string][]fakellm.Reply{"judge": {{Content: "Looks fine to me."}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "judge-key"), []byte(key), 0o400); err != nil {
		t.Fatal(err)
	}
	models := filepath.Join(tmp, "models.yaml")
	if err := os.WriteFile(models, []byte("judge: {provider: openai, model: judge, base_url: '"+f.URL()+"', api_key_env: judge-key}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	dir := judgedShop(t)
	err = runPack(context.Background(), []string{"validate", dir, "--model-config", models, "--secrets-dir", tmp}, &out, &errb, os.Args[0])
	var ee *exitError
	if !errors.As(err, &ee) || ee.Error() != "1 of 1 tasks failed validation" {
		t.Fatalf("err %v\n%s", err, out.String())
	}
	want := "FAIL shop_orders_02 (" + dir + "): state checks n/a, score 0, a grading component cannot grade the oracle's transcript (llm_judge): " +
		"Grading error: llm_judge: JUDGE_STATUS_ERRORED"
	if line := strings.TrimSpace(out.String()); !strings.HasPrefix(line, want) {
		t.Fatalf("output:\n%s\nwant prefix\n%s", line, want)
	}
	if reqs := f.RequestsFor("judge"); len(reqs) != 1 || reqs[0].Authorization != "Bearer "+key {
		t.Fatalf("%d judge requests, want 1 with the key file's key", len(reqs))
	}
	if strings.Contains(errb.String(), "stand-in") {
		t.Fatalf("the stand-in judged although a judge was configured:\n%s", errb.String())
	}

	// A model config without a judge is refused before anything runs.
	if err := os.WriteFile(models, []byte("agent: {provider: oracle}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = runPack(context.Background(), []string{"validate", dir, "--model-config", models}, &out, &errb, os.Args[0])
	if err == nil || err.Error() != "pack validate: --model-config "+models+": no \"judge\" model config" {
		t.Fatalf("err %v", err)
	}
}
