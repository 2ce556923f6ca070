package grading

import (
	"context"
	"fmt"

	"tolokaforge.io/operator/api/task"
)

// hashEvaluator compares the trial's stable hash with the golden state's: the state
// the golden actions produce from the initial state (the initial state itself for an
// empty golden path), or expected_hash when no golden actions are given.
type hashEvaluator struct{}

func (hashEvaluator) Name() string      { return evalHash }
func (hashEvaluator) Component() string { return task.ComponentStateChecks }

func (hashEvaluator) Evaluate(ctx context.Context, g *gradeCtx) (verdict, error) {
	sc := g.stateChecks()
	if sc == nil {
		return verdict{}, nil
	}
	keys := g.keysFor(evalHash)
	if !sc.HashEnabled {
		// golden_actions is filled by pack adapters whatever hash.enabled says.
		g.ledger.skipped(skipHashDisabled, keys...)
		return verdict{}, nil
	}
	if err := g.syncState(ctx); err != nil {
		return verdict{}, err
	}
	th, err := g.env.DB().Hash(ctx, g.id)
	if err != nil {
		return verdict{}, hashFailed("StableHashError: hashing the trial's state", err)
	}
	trialHash := th.StableHash
	g.trialHash = trialHash

	var golden goldenOutcome
	if len(sc.GoldenActions) == 0 && sc.ExpectedHash != nil {
		golden.hash = *sc.ExpectedHash
	} else {
		golden, err = replayGolden(ctx, g, sc.GoldenActions, func(h string) bool { return h != trialHash })
		if err != nil {
			return verdict{}, err
		}
		if sc.ExpectedHash != nil && *sc.ExpectedHash != golden.hash {
			return verdict{}, hashFailed(fmt.Sprintf(
				"ExpectedHashMismatch: state_checks.expected_hash is %s but the golden replay ends in stable state %s; one of them is stale",
				*sc.ExpectedHash, golden.hash), nil)
		}
	}
	g.ledger.evaluated(keys...)
	if golden.hash == trialHash {
		return verdict{scored: true, score: 1, segment: "State: hash match"}, nil
	}
	if golden.state == nil {
		// expected_hash alone names a digest, not a state: nothing to diff against.
		return verdict{scored: true, score: 0, segment: "State: hash mismatch"}, nil
	}
	trial, err := g.trialState(ctx)
	if err != nil {
		return verdict{}, err
	}
	d := computeDiff(golden.state, trial, g.pairingFields)
	d.authorShape(golden.state, trial, dictTableKeys(g.task))
	g.stateDiff = string(d.marshal(g.opts.maxDiffLines))
	return verdict{scored: true, score: 0, segment: "State: " + d.summary}, nil
}
