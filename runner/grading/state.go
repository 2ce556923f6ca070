package grading

import "tolokaforge.io/operator/runner/grading/gradefmt"

// hashWeightNotConsulted is the reasons line for a state_checks.hash_weight the fold
// never read because only one state source produced a score. It is a config input, not
// a scored key, so the ledger never sees it.
const hashWeightNotConsulted = "state_checks.hash_weight: skipped: only one state source produced a score, so the weight was never consulted"

// stateComponent folds the state sources into the state_checks component: the hash
// verdict, the JSONPath score and the probe score. Hash and JSONPath together fold by
// hash_weight (final = jsonpath*(1-w) + hash*w); probes are the sole source when
// declared, which preflight enforced.
func stateComponent(g *gradeCtx, hash, jp, probes verdict) (verdict, error) {
	sc := g.stateChecks()
	var v verdict
	switch {
	case probes.scored && (hash.scored || jp.scored):
		return v, notGradeable(g.id, "ValueError: state_checks.db_probes is the sole state source for a task that declares it, "+
			"yet a hash verdict or a JSONPath score arrived beside it", nil)
	case hash.scored && jp.scored:
		if sc.HashWeight == nil {
			return v, notGradeable(g.id, "ValueError: state_checks.hash.weight is required when a hash verdict and a JSONPath score are both real", nil)
		}
		w := *sc.HashWeight
		v = verdict{scored: true, score: gradefmt.Round6(jp.score*(1-w) + hash.score*w)}
	case hash.scored:
		v = hash
	case jp.scored:
		v = jp
	case probes.scored:
		v = probes
	default:
		return verdict{}, nil
	}
	sources := 0
	for _, s := range []verdict{hash, jp, probes} {
		if s.scored {
			sources++
		}
	}
	if sources == 1 && sc.HashWeight != nil {
		g.notes = append(g.notes, hashWeightNotConsulted)
	}
	return v, nil
}
