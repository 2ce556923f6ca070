package grading

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/timeline"
)

// notEvaluated is GradeComponents' sentinel for a component the trial did not score.
const notEvaluated = -1.0

type grader struct {
	opts       options
	evaluators []evaluator
}

// New returns the Grader. It is safe for concurrent use across trials; the runner
// serializes grading of one trial (golden replay owns the trial's database meanwhile).
func New(opts ...Option) Grader {
	return &grader{opts: newOptions(opts), evaluators: registry()}
}

// Grade implements Grader. A panic anywhere below is the catch-all row, never a crashed
// runner; golden replay restores the trial's state before such a panic gets here.
func (gr *grader) Grade(ctx context.Context, env Env, req Request) (grade *runnerpb.Grade, err error) {
	defer func() {
		if r := recover(); r != nil {
			gr.opts.log.Error(fmt.Errorf("panic: %v", r), "grading panicked", "stack", string(debug.Stack()))
			grade, err = nil, &Error{Msg: fmt.Sprintf("Grading error: panic: %v", r)}
		}
	}()
	g, err := gr.prepare(env, req)
	if err != nil {
		return nil, err
	}
	switch {
	case g.cfg.GradingMethod == task.GradingTestExecution && g.task.Environment != nil:
		// A terminal task: its tests run in its own container.
		if ex := env.Environment(); ex == nil {
			err = envError("trial %q has an environment but none is connected to the runner", g.id)
		} else {
			uctx, end := startUnit(ctx, env, UnitEnvironmentTests)
			grade, err = runEnvironmentVerification(uctx, g, ex)
			end(true, err)
		}
	case g.cfg.GradingMethod == task.GradingTestExecution:
		uctx, end := startUnit(ctx, env, UnitTestExecution)
		grade, err = runTestExecution(uctx, g)
		end(true, err)
	default:
		grade, err = gr.run(ctx, g)
	}
	if err != nil {
		err = withJudgeSpend(gradingError(err), g.judge)
		gr.opts.log.V(1).Info("grading failed", "trial", g.id, "error", err.Error())
		return nil, err
	}
	gr.opts.log.V(1).Info("graded", "trial", g.id, "score", grade.Score, "pass", grade.BinaryPass)
	return grade, nil
}

// prepare runs steps 0-2: everything that can refuse the request without touching
// the trial's state.
func (gr *grader) prepare(env Env, req Request) (*gradeCtx, error) {
	id := env.TrialID()
	spec := env.Spec()
	if spec == nil || spec.Task == nil {
		return nil, gradingError(fmt.Errorf("trial %q was registered without a task description", id))
	}
	cfg := spec.Task.Grading
	if cfg == nil {
		cfg = &task.GradingConfig{}
	}

	// Step 0: the request itself.
	reason, err := task.ParseTerminationReason(req.TerminationReason)
	if err != nil {
		return nil, notGradeable(id, "ValueError: "+err.Error(), err)
	}
	scope, err := parseScope(req.Components)
	if err != nil {
		return nil, notGradeable(id, "ValueError: "+err.Error(), err)
	}
	var msgs []task.Message
	if len(bytes.TrimSpace(req.Transcript)) > 0 {
		if msgs, err = task.DecodeTranscriptWire(req.Transcript); err != nil {
			detail := err.Error()
			if !strings.HasPrefix(detail, "ValueError: ") {
				detail = "ValueError: " + detail
			}
			return nil, notGradeable(id, detail, err)
		}
	}
	policy, rest := task.SplitLeadingSystemMessage(msgs)
	tl, inconsistency := timeline.Build(rest, env.Records())
	if inconsistency != "" {
		return nil, timelineInconsistent(id, inconsistency)
	}
	tl.Policy, tl.Termination = policy, reason
	g := &gradeCtx{
		opts: &gr.opts, env: env, id: id, task: spec.Task, cfg: cfg,
		timeline: tl, transcriptEmpty: len(msgs) == 0, scope: scope, ledger: newLedger(),
	}
	if cfg.GradingMethod == task.GradingTestExecution {
		// It dispatches before the component phase: no ledger, no golden replay.
		return g, nil
	}
	g.populated = populatedKeys(cfg, g.wants)

	// Step 1: golden actions name tools the replay can call.
	if sc := g.stateChecks(); sc != nil && sc.HashEnabled {
		if g.golden, err = resolveGoldenActions(sc.GoldenActions, env.AgentTools()); err != nil {
			return nil, err
		}
	}
	// Step 2: the pre-flight refusals.
	if g.plan, err = preflight(g); err != nil {
		return nil, err
	}
	return g, nil
}

// parseScope reads grading_components: empty means every configured component.
func parseScope(components []string) (map[string]bool, error) {
	if len(components) == 0 {
		return nil, nil
	}
	known := map[string]bool{}
	for _, c := range task.ComponentNames() {
		known[c] = true
	}
	scope := map[string]bool{}
	for i, c := range components {
		if !known[c] {
			return nil, fmt.Errorf("grading_components[%d]: %q is not one of %s", i, c, strings.Join(task.ComponentNames(), ", "))
		}
		scope[c] = true
	}
	return scope, nil
}

// run is the component phase, the ledger and the fold.
func (gr *grader) run(ctx context.Context, g *gradeCtx) (*runnerpb.Grade, error) {
	byName := map[string]verdict{}
	var order []string
	for _, ev := range gr.evaluators {
		if !g.wants(ev.Component()) {
			continue
		}
		v, err := evaluate(ctx, g, ev)
		if err != nil {
			return nil, err
		}
		byName[ev.Name()] = v
		order = append(order, ev.Name())
	}

	if err := g.ledger.check(g.populated, gr.implemented); err != nil {
		return nil, err
	}

	state, err := stateComponent(g, byName[evalHash], byName[evalJSONPath], byName[evalDBProbes])
	if err != nil {
		return nil, err
	}
	components := map[string]verdict{task.ComponentStateChecks: state}
	for _, ev := range gr.evaluators {
		if ev.Component() != task.ComponentStateChecks {
			components[ev.Component()] = byName[ev.Name()]
		}
	}

	var scored []componentScore
	for _, name := range task.ComponentNames() {
		if v := components[name]; v.scored {
			scored = append(scored, componentScore{name: name, score: v.score})
		}
	}
	weights := map[string]float64{}
	for k, w := range g.cfg.Weights {
		if g.wants(k) {
			weights[k] = w
		}
	}
	threshold := task.DefaultPassThreshold
	if g.cfg.PassThreshold != nil {
		threshold = *g.cfg.PassThreshold
	}
	res, err := fold(g.id, g.cfg.CombineMethod, weights, threshold, scored, g.asked(weights))
	if err != nil {
		return nil, err
	}

	var segments []string
	for _, name := range order {
		segments = append(segments, byName[name].segment)
	}
	grade := &runnerpb.Grade{
		BinaryPass: res.pass,
		Score:      res.score,
		Components: &runnerpb.GradeComponents{
			StateChecks:     scoreOrSentinel(components[task.ComponentStateChecks]),
			TranscriptRules: scoreOrSentinel(components[task.ComponentTranscriptRules]),
			LlmJudge:        scoreOrSentinel(components[task.ComponentLLMJudge]),
			CustomChecks:    scoreOrSentinel(components[task.ComponentCustomChecks]),
			// TraceChecks keeps explicit presence: unset until an evaluator scores it.
		},
		Reasons:       joinReasons(segments, g.notes, []string{res.sentence}, g.ledger.notes()),
		StateDiffJson: g.stateDiff,
	}
	g.judge.Apply(grade)
	if v := components[task.ComponentTraceChecks]; v.scored {
		s := v.score
		grade.Components.TraceChecks = &s
	}
	grade.TraceChecks, grade.TraceChecksSummary, grade.CustomChecks = g.traceResults, g.traceSummary, g.customResults
	if g.traceGateFailed {
		// A failed gate fails the trial outright whatever the fold said; the component
		// keeps its own score so the report still shows how the route did.
		grade.Score, grade.BinaryPass = 0, false
	}
	return grade, nil
}

// evaluate runs one evaluator as a grading unit (its span and its time).
func evaluate(ctx context.Context, g *gradeCtx, ev evaluator) (v verdict, err error) {
	ctx, end := startUnit(ctx, g.env, ev.Name())
	defer func() { end(v.scored, err) }()
	return ev.Evaluate(ctx, g)
}

// asked lists, in component order, what the task configured or weighted within the
// requested components: what a fold with nothing scored owed an account of.
func (g *gradeCtx) asked(weights map[string]float64) []string {
	var out []string
	for _, name := range task.ComponentNames() {
		configured := false
		for _, k := range g.populated {
			if k.component == name {
				configured = true
				break
			}
		}
		_, weighted := weights[name]
		switch {
		case configured && weighted:
			out = append(out, name+" (configured and weighted)")
		case configured:
			out = append(out, name+" (configured)")
		case weighted:
			out = append(out, name+" (weighted)")
		}
	}
	return out
}

func (gr *grader) implemented(name string) bool {
	for _, ev := range gr.evaluators {
		if ev.Name() == name {
			p, pending := ev.(interface{ implemented() bool })
			return !pending || p.implemented()
		}
	}
	return false
}

func scoreOrSentinel(v verdict) float64 {
	if v.scored {
		return v.score
	}
	return notEvaluated
}
