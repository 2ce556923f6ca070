package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/runner/proc"
	"tolokaforge.io/operator/runner/tools"
)

// GradeTrial implements RunnerService.GradeTrial by handing the trial to the
// configured grading.Grader under the trial's lock, so nothing else touches
// the trial while golden replay resets and restores its state.
func (s *Server) GradeTrial(ctx context.Context, req *runnerpb.GradeTrialRequest) (*runnerpb.GradeTrialResponse, error) {
	t := s.lookup(req.GetTrialId())
	if t == nil {
		return &runnerpb.GradeTrialResponse{Success: false, Error: trialNotFound(req.GetTrialId())}, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return &runnerpb.GradeTrialResponse{Success: false, Error: trialNotFound(req.GetTrialId())}, nil
	}
	if s.cfg.Grader == nil {
		return &runnerpb.GradeTrialResponse{Success: false, Error: "Grading error: no grader configured"}, nil
	}
	if t.env != nil {
		// The agent stopped: from here its environment's tools are not
		// served (ExecuteTool answers that the agent's turn is over), so
		// nothing changes the container under the verifier.
		t.agentDone = true
	}
	t.flushPending(ctx, nil)
	// Grading writes to the DB directly (snapshot, reset, restore); learn the
	// version it left so MCP servers are reloaded before the next call.
	defer func() {
		if err := t.db.refresh(context.WithoutCancel(ctx)); err != nil {
			t.log.Error(err, "read the DB version after grading")
		}
	}()
	start := time.Now()
	grade, err := s.gradeSafely(ctx, t, grading.Request{
		Transcript:        []byte(req.GetLlmMessagesJson()),
		TerminationReason: req.GetTerminationReason(),
		Components:        req.GetGradingComponents(),
	})
	s.metrics.graded(err == nil, time.Since(start))
	if err != nil {
		t.log.Info("grading failed", "error", err.Error())
		if jr := grading.JudgeReportOf(err); jr != nil {
			// No grade on failure, but the judge was billed: its spend rides in the trailer.
			if md, merr := runnerpb.JudgeReportMD(jr); merr != nil {
				t.log.Error(merr, "encode the failed judge's report")
			} else if serr := grpc.SetTrailer(ctx, md); serr != nil {
				t.log.Error(serr, "send the failed judge's report")
			}
		}
		return &runnerpb.GradeTrialResponse{Success: false, Error: err.Error()}, nil
	}
	return &runnerpb.GradeTrialResponse{Success: true, Grade: grade}, nil
}

// gradeSafely keeps a panicking grader from taking the runner down.
func (s *Server) gradeSafely(ctx context.Context, t *trial, req grading.Request) (g *runnerpb.Grade, err error) {
	defer func() {
		if p := recover(); p != nil {
			g, err = nil, wiref("Grading error: grader panicked: %v", p)
		}
	}()
	gctx, kept := tools.WithOutputSink(ctx)
	g, err = s.cfg.Grader.Grade(gctx, &trialEnv{s: s, t: t}, req)
	if whole := kept.Output(); len(whole) > 0 {
		if serr := grpc.SetTrailer(ctx, runnerpb.TestOutputMD(whole)); serr != nil {
			t.log.V(1).Info("the tests' whole output cannot be sent", "error", serr.Error())
		}
	}
	if err == nil && g == nil {
		err = wiref("Grading error: grader returned no grade")
	}
	return g, err
}

// trialEnv is grading.Env over a registered trial. The grader runs with the
// trial's lock held, so its methods take no lock of their own.
type trialEnv struct {
	s *Server
	t *trial
}

var (
	_ grading.Env      = (*trialEnv)(nil)
	_ grading.Observer = (*trialEnv)(nil)
)

func (e *trialEnv) TrialID() string                  { return e.t.id }
func (e *trialEnv) Spec() *task.TrialSpec            { return e.t.spec }
func (e *trialEnv) AgentTools() []string             { return e.t.agent.Names() }
func (e *trialEnv) UserTools() []string              { return e.t.user.Names() }
func (e *trialEnv) Records() []task.RecordedToolCall { return e.t.recordsCopy() }
func (e *trialEnv) DB() *client.Client               { return e.t.db.c }
func (e *trialEnv) WorkDir() string                  { return e.t.filesDir }

// GradingUnit and VerifierRan count the grader's components and verifier runs.
func (e *trialEnv) GradingUnit(unit string, took time.Duration, err error) {
	e.s.metrics.gradingUnit(unit, took, err)
}
func (e *trialEnv) VerifierRan(outcome string) { e.s.metrics.verifierRan(outcome) }

// JudgeKey is the judge's key the host gave for this trial (grading.JudgeKeyHolder);
// "" when it gave none.
func (e *trialEnv) JudgeKey() string { return e.t.judgeKey }

// Environment is the trial's own container, nil without one (an untyped
// nil, so the grader's nil check holds).
func (e *trialEnv) Environment() grading.EnvironmentExec {
	if e.t.env == nil {
		return nil
	}
	return e.t.env
}

// AgentToolSchemas are the agent tools as RegisterTrial advertised them (judge tools).
func (e *trialEnv) AgentToolSchemas() []*runnerpb.ToolSchema { return toolSchemas(e.t.agent) }

// VerifierSite is the trial's verifier directory, beside the file tools' root;
// the verifier carries the trial's tag, as its tools do, so CleanupTrial also
// kills a process that left the verifier's group.
func (e *trialEnv) VerifierSite() grading.VerifierSite {
	return grading.VerifierSite{Dir: newLayout(e.t.dir).verifier, Env: []string{trialTag(e.t.dir)}}
}

// PythonSite runs a Python custom-check suite as the trial's tools run: the
// runner's interpreter, the read-only copy of the tool_artifacts taken at
// RegisterTrial (never the tools' writable working directory, so a tool cannot
// shadow a module the suite imports), its tool limits and tag; the check
// runner is written beside the verifier's directory, out of every file tool's
// reach.
//
// The grader asks for it just before the suite runs: the trial's Python tool
// host is stopped first, with everything below its supervisor, so no tool
// process runs beside the checks (a later replay restarts the host).
func (e *trialEnv) PythonSite() grading.PythonSite {
	if e.t.py != nil {
		if err := e.t.py.close(); err != nil {
			e.t.log.Error(err, "stop the Python tool host before the Python checks")
		}
	}
	lay := newLayout(e.t.dir)
	return grading.PythonSite{Python: e.s.cfg.Python, ArtifactsDir: lay.pack, ScratchDir: lay.verifier,
		Limits: e.s.cfg.ToolLimits, Env: []string{trialTag(e.t.dir)}, Confine: &proc.Confinement{}}
}

// Replay runs one golden action through the adapter ExecuteTool uses, within
// the tool's own budget, without recording it. The DB's version is read first:
// grading resets it directly, and an MCP server must be reloaded from the DB
// before it replays anything.
func (e *trialEnv) Replay(ctx context.Context, toolName string, args json.RawMessage) (task.ToolCallStatus, string, error) {
	entry, ok := e.t.agent.Lookup(toolName)
	if !ok {
		return task.ToolCallToolNotFound, fmt.Sprintf("Tool '%s' not found in agent tools", toolName), nil
	}
	valid, err := entry.Validator.Validate(args)
	if err != nil {
		return task.ToolCallInvalidArguments, fmt.Sprintf("Invalid arguments for tool '%s': %v", toolName, err), nil
	}
	if err := e.t.db.refresh(ctx); err != nil {
		return "", "", fmt.Errorf("read the DB version before replay: %w", err)
	}
	out := tools.Invoke(ctx, entry, valid, tools.Budget(0, entry.Timeout, e.t.defaultTimeout))
	if out.Status == task.ToolCallSuccess {
		return out.Status, out.Output, nil
	}
	return out.Status, out.Message, nil
}

// SyncFromTools writes every stateful MCP server's changed tables into the DB.
// The runner already writes them back after each call, so this finds nothing
// to do unless a server changed outside a call; a server the DB moved past is
// stale and is not written.
func (e *trialEnv) SyncFromTools(ctx context.Context) error {
	if err := e.t.db.refresh(ctx); err != nil {
		return fmt.Errorf("sync MCP server state into the DB: %w", err)
	}
	for _, sess := range e.t.sessions {
		if err := sess.syncToDB(ctx); err != nil {
			return fmt.Errorf("sync MCP server state into the DB: %w", err)
		}
	}
	return nil
}

// PushToTools loads the DB's current tables into every stateful MCP server.
func (e *trialEnv) PushToTools(ctx context.Context) error {
	for _, sess := range e.t.sessions {
		if err := sess.push(ctx); err != nil {
			return fmt.Errorf("push DB state into MCP server: %w", err)
		}
	}
	return nil
}
