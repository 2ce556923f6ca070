package grading

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/theory/jsonpath"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
)

// dbProbesEvaluator scores state_checks.db_probes: named read-only JSONPath queries the
// DB service evaluates (POST .../query), each with one expectation. Score = passed /
// total. Probes are the sole state source when declared (preflight refuses a mix).
//
// The DB service holds every table as a list, so on a task with dict tables a probe
// written against the author's data ($.db.users['noah_brown_6181']) would select
// nothing there. Such a task's probes are evaluated here instead, over the same author
// view JSONPath checks read (authorRoot) built from the full state the service's query
// reads (unstable fields included), with the same RFC 9535 engine the service uses
// (github.com/theory/jsonpath). A task without dict tables keeps the service's query:
// the spec names the DB service as the probes' evaluator, and nothing differs there.
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
	var root map[string]any
	if keys := dictTableKeys(g.task); len(keys) > 0 {
		var err error
		if root, err = fullAuthorRoot(ctx, g, keys); err != nil {
			return verdict{}, fmt.Errorf("state_checks.db_probes: %w", err)
		}
	}
	outcomes := make([]checkOutcome, 0, len(sc.DBProbes))
	for i := range sc.DBProbes {
		p := &sc.DBProbes[i]
		var (
			results []json.RawMessage
			count   int
		)
		if root != nil {
			var err error
			if results, err = selectProbe(root, p.Query); err != nil {
				return verdict{}, fmt.Errorf("state_checks.db_probes[%d] (id %q): query %q: %w", i, p.ID, p.Query, err)
			}
			count = len(results)
		} else {
			resp, err := g.env.DB().Query(ctx, g.id, p.Query)
			if err != nil {
				return verdict{}, fmt.Errorf("state_checks.db_probes[%d] (id %q): query %q: %w", i, p.ID, p.Query, err)
			}
			results, count = resp.Results, resp.Count
		}
		ok, msg := expectProbe(&p.Expect, results, count)
		label := p.ID
		if p.Description != "" {
			label = p.ID + ": " + p.Description
		}
		outcomes = append(outcomes, checkOutcome{passed: ok, label: label, msg: msg})
	}
	g.ledger.evaluated(g.keysFor(evalDBProbes)...)
	return scoreOutcomes("DB probes", "probes", outcomes), nil
}

// fullAuthorRoot reads the trial's full state (what the service's query reads) as the
// author's view: {db: tables}, dict tables as dicts.
func fullAuthorRoot(ctx context.Context, g *gradeCtx, keys map[string]string) (map[string]any, error) {
	resp, err := g.env.DB().State(ctx, g.id, nil)
	if err != nil {
		return nil, fmt.Errorf("reading the trial's state: %w", err)
	}
	tables := make(map[string]canonical.Value, len(resp.Data))
	for name, raw := range resp.Data {
		v, err := canonical.Parse(bytes.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("the trial's table %q does not parse: %w", name, err)
		}
		tables[name] = v
	}
	return authorRoot(tables, keys), nil
}

// selectProbe evaluates query over root and returns each selected node in canonical
// form, as the service's query answers.
func selectProbe(root map[string]any, query string) ([]json.RawMessage, error) {
	path, err := jsonpath.Parse(query)
	if err != nil {
		// Preflight parsed every probe at RegisterTrial; this is a defect, not a verdict.
		return nil, fmt.Errorf("invalid JSONPath: %w", err)
	}
	nodes := path.Select(root)
	out := make([]json.RawMessage, 0, len(nodes))
	for i, n := range nodes {
		v, err := canonical.FromAny(n)
		if err != nil {
			return nil, fmt.Errorf("result %d: %w", i, err)
		}
		out = append(out, canonical.Marshal(v))
	}
	return out, nil
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
