package grading

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
)

// dbProbesEvaluator scores state_checks.db_probes: named read-only JSONPath queries the
// DB service evaluates (POST .../query), each with one expectation. Score = passed /
// total. Probes are the sole state source when declared (preflight refuses a mix).
type dbProbesEvaluator struct{}

func (dbProbesEvaluator) Name() string      { return evalDBProbes }
func (dbProbesEvaluator) Component() string { return task.ComponentStateChecks }

func (dbProbesEvaluator) Evaluate(ctx context.Context, g *gradeCtx) (verdict, error) {
	sc := g.stateChecks()
	if sc == nil || len(sc.DBProbes) == 0 {
		return verdict{}, nil
	}
	if err := g.syncState(ctx); err != nil {
		return verdict{}, err
	}
	outcomes := make([]checkOutcome, 0, len(sc.DBProbes))
	for i := range sc.DBProbes {
		p := &sc.DBProbes[i]
		resp, err := g.env.DB().Query(ctx, g.id, p.Query)
		if err != nil {
			return verdict{}, fmt.Errorf("state_checks.db_probes[%d] (id %q): query %q: %w", i, p.ID, p.Query, err)
		}
		ok, msg := expectProbe(&p.Expect, resp.Results, resp.Count)
		label := p.ID
		if p.Description != "" {
			label = p.ID + ": " + p.Description
		}
		outcomes = append(outcomes, checkOutcome{passed: ok, label: label, msg: msg})
	}
	g.ledger.evaluated(g.keysFor(evalDBProbes)...)
	return scoreOutcomes("DB probes", "probes", outcomes), nil
}

// expectProbe applies a probe's expectation to the service's answer.
func expectProbe(e *task.ProbeExpect, results []json.RawMessage, count int) (bool, string) {
	switch {
	case e.Count != nil:
		if count == *e.Count {
			return true, ""
		}
		return false, fmt.Sprintf("expected count %d, got %d", *e.Count, count)
	case e.Exists != nil:
		if (count > 0) == *e.Exists {
			return true, ""
		}
		if *e.Exists {
			return false, "expected a result, got none"
		}
		return false, fmt.Sprintf("expected no result, got %d", count)
	case e.Absent != nil:
		if (count == 0) == *e.Absent {
			return true, ""
		}
		if *e.Absent {
			return false, fmt.Sprintf("expected no result, got %d", count)
		}
		return false, "expected a result, got none"
	case e.Equals != nil:
		want, err := canonical.Parse(bytes.TrimSpace(e.Equals))
		if err != nil {
			return false, fmt.Sprintf("expect.equals does not parse: %v", err)
		}
		wantArr, ok := want.(canonical.Array)
		if !ok {
			return false, "expect.equals is not a list of results"
		}
		got := make(canonical.Array, 0, len(results))
		for i, r := range results {
			v, err := canonical.Parse(bytes.TrimSpace(r))
			if err != nil {
				return false, fmt.Sprintf("result %d does not parse: %v", i, err)
			}
			got = append(got, v)
		}
		if canonical.Equal(wantArr, got) {
			return true, ""
		}
		return false, fmt.Sprintf("expected results %s, got %s", show(wantArr), show(got))
	}
	return false, "no expectation (one of count, equals, exists, absent)"
}
