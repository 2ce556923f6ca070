package host_test

import (
	"testing"

	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/controllers/host/trialrun"
)

func TestOracleOnShopPasses(t *testing.T) {
	s := startStack(t, trialrun.StackConfig{})
	tk := shopTask(t)
	spec := specFor(s, tk, nil)
	res := host.RunAttempt(ctxT(t), attempt(s, spec, agents.NewOracle(tk), nil))
	t.Logf("%s: %s", res, res.Message)
	if res.Outcome != host.OutcomeGraded || res.Grade == nil || !res.Grade.GetBinaryPass() {
		t.Fatalf("oracle on shop: %s %s", res, res.Message)
	}
}
