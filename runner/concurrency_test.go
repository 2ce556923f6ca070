package runner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// Test64TrialsInterleaved registers 64 trials on one runner and drives them at
// once, every eighth with its own MCP server: each trial must see only its own
// state and record.
func Test64TrialsInterleaved(t *testing.T) {
	const trials, calls = 64, 12
	pg := &probeGrader{}
	h := startRunner(t, nil, withGrader(pg))
	var wg sync.WaitGroup
	errs := make(chan error, trials)
	for i := range trials {
		wg.Go(func() {
			id := fmt.Sprintf("many:%02d", i)
			agent := []any{tool("db_insert"), tool("db_find"), tool("calculator")}
			if i%8 == 0 {
				agent = append(agent, testkitTool("incr", nil))
			}
			// No t.Fatal off the test goroutine: errors travel on errs.
			resp, err := h.c.RegisterTrial(context.Background(), &runnerpb.RegisterTrialRequest{
				TrialId: id, TrialSpecJson: specJSON(t, id, baseTask(agent, nil, obj{"items": []any{}, "counters": []any{}})),
				EngineProtocolVersion: task.EngineProtocolVersion,
			})
			if err != nil || !resp.GetSuccess() {
				errs <- fmt.Errorf("%s: %v %s", id, err, resp.GetError())
				return
			}
			for j := range calls {
				c := call{tool: "db_insert", args: fmt.Sprintf(`{"table":"items","record":{"id":%d,"trial":%d}}`, j, i), callID: fmt.Sprintf("c%d", j)}
				switch {
				case j%3 == 1:
					c = call{tool: "calculator", args: fmt.Sprintf(`{"expression":"%d*%d"}`, i, j), callID: c.callID}
				case j%3 == 2 && i%8 == 0:
					c = call{tool: "incr", args: `{"key":"k"}`, callID: c.callID}
				}
				r, err := h.c.ExecuteTool(context.Background(), &runnerpb.ExecuteToolRequest{TrialId: id, ToolName: c.tool, ArgumentsJson: c.args, CallId: c.callID})
				if err != nil {
					errs <- fmt.Errorf("%s %s: %v", id, c.tool, err)
					return
				}
				if r.GetStatus() != stSuccess {
					errs <- fmt.Errorf("%s %s: %s %s", id, c.tool, r.GetStatus(), r.GetErrorMessage())
					return
				}
				if c.tool == "calculator" && r.GetOutput() != fmt.Sprint(i*j) {
					errs <- fmt.Errorf("%s: %s = %s", id, c.args, r.GetOutput())
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if n := h.srv.ActiveTrials(); n != trials {
		t.Fatalf("active trials = %d", n)
	}
	for i := range trials {
		id := fmt.Sprintf("many:%02d", i)
		want := ""
		wantCounter := "[]"
		for j := range calls {
			switch {
			case j%3 == 1:
			case j%3 == 2 && i%8 == 0:
				wantCounter = fmt.Sprintf(`[{"id":"k","n":%d}]`, (j+1)/3)
			default:
				if want != "" {
					want += ","
				}
				want += fmt.Sprintf(`{"id":%d,"trial":%d}`, j, i)
			}
		}
		if got := h.state(t, id, true).GetStateJson(); got != fmt.Sprintf(`{"counters":%s,"items":[%s]}`, wantCounter, want) {
			t.Errorf("%s state = %s", id, got)
		}
		recs := recordsOf(t, h, pg, id)
		if len(recs) != calls {
			t.Errorf("%s: %d records", id, len(recs))
			continue
		}
		for j, r := range recs {
			if r.Sequence != j || r.CallID != fmt.Sprintf("c%d", j) {
				t.Errorf("%s record %d: seq %d id %s", id, j, r.Sequence, r.CallID)
			}
		}
	}
}
