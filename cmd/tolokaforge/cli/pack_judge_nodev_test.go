//go:build !dev

package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// The production build has no stand-in judge: a judged pack without a judge model
// fails validation, saying how to give one, and nothing is graded by a fake.
func TestValidateCommandWithoutAJudgeModelSaysHowToGiveOne(t *testing.T) {
	if testing.Short() {
		t.Skip("runs trials")
	}
	var out, errb bytes.Buffer
	dir := judgedShop(t)
	err := runPack(context.Background(), []string{"validate", dir}, &out, &errb, os.Args[0])
	if err == nil {
		t.Fatalf("validate passed a judged pack with no judge model:\n%s", out.String())
	}
	line := strings.TrimSpace(out.String())
	if !strings.HasPrefix(line, "FAIL shop_orders_02 ("+dir+")") ||
		!strings.Contains(line, `task shop_orders_02 has an llm_judge and no judge model is configured: give --model-config with a "judge" entry`) {
		t.Fatalf("output: %s", line)
	}
	if strings.Contains(errb.String(), "stand-in judge") {
		t.Fatalf("a stand-in judge answered in the production build:\n%s", errb.String())
	}
}
