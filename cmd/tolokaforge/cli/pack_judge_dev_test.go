//go:build dev

package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// Without a judge model, pack validate grades the judge against the in-process stand-in
// (test/fakellm): every configured component is graded and named.
func TestValidateCommandGradesTheJudgeWithTheStandIn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs trials")
	}
	var out, errb bytes.Buffer
	dir := judgedShop(t)
	if err := runPack(context.Background(), []string{"validate", dir}, &out, &errb, os.Args[0]); err != nil {
		t.Fatalf("validate: %v\n%s\n%s", err, out.String(), errb.String())
	}
	line := strings.TrimSpace(out.String())
	if !strings.HasPrefix(line, "PASS shop_orders_02 ("+dir+"): state checks 1, score ") ||
		!strings.Contains(line, "golden path verified; every configured component graded: state_checks=1, transcript_rules=0.4444, llm_judge=1;") {
		t.Fatalf("output: %s", line)
	}
	if !strings.Contains(errb.String(), "shop_orders_02: llm_judge answered by the in-process stand-in judge (no --model-config judge)") {
		t.Fatalf("stderr lacks the stand-in note:\n%s", errb.String())
	}
}
