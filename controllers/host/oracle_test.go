package host_test

import (
	"testing"

	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/results/local"
)

func TestOracleOnShopPasses(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	tk := shopTask(t)
	spec := specFor(s, tk, nil)
	res := host.RunAttempt(ctxT(t), attempt(s, spec, agents.NewOracle(tk), nil))
	t.Logf("%s: %s", res, res.Message)
	if res.GradedBy != host.GradedByRunner || res.Grade == nil || !res.Grade.GetBinaryPass() {
		t.Fatalf("oracle on shop: %s %s", res, res.Message)
	}
	// An oracle is graded on state checks only: the transcript rules would
	// score a conversation the oracle never has.
	g := res.Grade
	if g.GetScore() != 1.0 || g.GetComponents().GetStateChecks() != 1.0 || g.GetComponents().GetTranscriptRules() != -1 {
		t.Fatalf("oracle grade = score %v state %v transcript %v, want 1, 1, -1 (reasons %q)",
			g.GetScore(), g.GetComponents().GetStateChecks(), g.GetComponents().GetTranscriptRules(), g.GetReasons())
	}
	if want := "State: hash match | JSONPath: all 7 checks passed"; g.GetReasons() != want {
		t.Fatalf("reasons = %q, want %q", g.GetReasons(), want)
	}
}
