package report

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/result"
	"tolokaforge.io/operator/api/runnerpb"
)

// Pointed at the manager's store itself (<ns>/<trial>/attempt-<n>/...), a
// Campaign's three trials of one agent fold into one row: who ran a trial is
// its own record, not the folder it sits in.
func TestStoreFoldsACampaignsTrialsByTheirRecord(t *testing.T) {
	root := t.TempDir()
	for i, pass := range []bool{true, false, true} {
		trial := fmt.Sprintf("shop-oracle-oracle-shop-orders-02-%d", i)
		sink := artifacts.DirSink(filepath.Join(root, "default", trial, "attempt-1"))
		score := 0.0
		if pass {
			score = 1
		}
		_, err := artifacts.WriteTo(context.Background(), sink, &artifacts.Attempt{
			TrialID: fmt.Sprintf("shop_orders_02:%d", i), TaskID: "shop_orders_02", TrialIndex: i, AttemptNumber: 1,
			Record:  result.Record{Namespace: "default", Trial: trial, Campaign: "shop-oracle", Agent: "oracle"},
			Outcome: "Passed", TerminationReason: "agent_done", GradedBy: "runner",
			Grade: &runnerpb.Grade{BinaryPass: pass, Score: score, Reasons: "State: hash match",
				Components: &runnerpb.GradeComponents{StateChecks: score, TranscriptRules: -1, LlmJudge: -1, CustomChecks: -1}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rep, err := FromArtifacts(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Agents) != 1 || rep.Agents[0] != "oracle" {
		t.Fatalf("agents = %q, want [oracle]", rep.Agents)
	}
	rows := rep.Rows()
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1: %+v", len(rows), rows)
	}
	r := rows[0]
	if r.Agent != "oracle" || r.Task != "shop_orders_02" || r.N != 3 || r.C != 2 || r.PassHat == nil || rep.K != 3 {
		t.Fatalf("row = %+v (K %d)", r, rep.K)
	}
	for i, tr := range rep.Trials {
		if want := fmt.Sprintf("default/shop-oracle-oracle-shop-orders-02-%d", i); tr.Name != want || tr.Index != i {
			t.Errorf("trial %d = %s index %d, want %s index %d", i, tr.Name, tr.Index, want, i)
		}
	}
}
