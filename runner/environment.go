package runner

import (
	"context"
	"fmt"
	"time"

	pb "tolokaforge.io/operator/api/execagentpb"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/execagent/client"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/runner/tools/envtools"
)

// DefaultEnvironmentTokenEnv is the variable the runner binary reads a
// terminal task's exec agent token from (--environment-token-env).
const DefaultEnvironmentTokenEnv = "TOLOKAFORGE_ENVIRONMENT_TOKEN"

// trialEnvironment is a terminal task's own container, reached through its
// exec agent: the agent's tools run there, and the verifier after them.
type trialEnvironment struct {
	addr  string
	c     *client.Client
	paths grading.EnvironmentPaths
	tools *envtools.Set
}

var _ grading.EnvironmentExec = (*trialEnvironment)(nil)

func (e *trialEnvironment) Address() string                 { return e.addr }
func (e *trialEnvironment) Paths() grading.EnvironmentPaths { return e.paths }

// The exec agent's calls, for grading.EnvironmentExec.
func (e *trialEnvironment) Exec(ctx context.Context, req *pb.ExecRequest) (*pb.ExecResponse, error) {
	return e.c.Exec(ctx, req)
}

func (e *trialEnvironment) ReadFile(ctx context.Context, req *pb.ReadFileRequest) (*pb.ReadFileResponse, error) {
	return e.c.ReadFile(ctx, req)
}

func (e *trialEnvironment) PutTar(ctx context.Context, req *pb.PutTarRequest) (*pb.PutTarResponse, error) {
	return e.c.PutTar(ctx, req)
}

func (e *trialEnvironment) ResetDir(ctx context.Context, req *pb.ResetDirRequest) (*pb.ResetDirResponse, error) {
	return e.c.ResetDir(ctx, req)
}

func (e *trialEnvironment) KillAll(ctx context.Context, req *pb.KillAllRequest) (*pb.KillAllResponse, error) {
	return e.c.KillAll(ctx, req)
}

func (e *trialEnvironment) close() error {
	if e == nil || e.c == nil {
		return nil
	}
	return e.c.Close()
}

// environmentToken is the exec agent token a registration is to use: the
// one its metadata carries (runnerpb.EnvironmentTokenMetadata: a slot's host
// sends each trial's), else the runner's own (--environment-token-file, a
// per-attempt runner's). A slot's runner has none of its own: a token it kept
// would be an earlier trial's. "" when there is none; never logged.
func (s *Server) environmentToken(ctx context.Context) (string, error) {
	tok, ok, err := runnerpb.EnvironmentTokenFromIncoming(ctx)
	if err != nil {
		return "", wiref("%s%v", task.EnvironmentErrorPrefix, err)
	}
	if ok {
		return tok, nil
	}
	if s.cfg.Slot {
		return "", nil
	}
	return s.cfg.EnvironmentToken, nil
}

// checkEnvironment refuses, before anything is created, a trial whose task
// has an environment the runner cannot reach.
func (s *Server) checkEnvironment(spec *task.TrialSpec, token string) error {
	env := spec.Task.Environment
	if env == nil {
		return nil
	}
	if spec.EnvEndpoints == nil || spec.EnvEndpoints.EnvironmentURL == "" {
		return fmt.Errorf("task %q runs in its own container (environment), but the trial spec's env_endpoints.environment_url is empty: "+
			"the trial must run on a cluster, where the manager starts the task's environment and names its exec agent", spec.Task.TaskID)
	}
	if token == "" && s.cfg.Slot {
		return fmt.Errorf("task %q runs in its own container (environment), but its registration on this slot's runner carries no token for its exec agent (%s metadata); "+
			"a slot's runner keeps no token of an earlier trial", spec.Task.TaskID, runnerpb.EnvironmentTokenMetadata)
	}
	if token == "" {
		return fmt.Errorf("task %q runs in its own container (environment), but this runner has no token for its exec agent (--environment-token-env)", spec.Task.TaskID)
	}
	return nil
}

// connectEnvironment dials the trial's exec agent and waits for its Health,
// until a little before the registration's deadline (EnvironmentWait
// without one). The trial keeps the client, and with it token, until
// cleanup: the token lives nowhere else in the runner.
func (s *Server) connectEnvironment(ctx context.Context, t *trial, token string) error {
	spec := t.spec
	addr := spec.EnvEndpoints.EnvironmentURL
	c, err := client.Dial(addr, client.Options{Token: token})
	if err != nil {
		return wiref("%stask %q: %v", task.EnvironmentErrorPrefix, spec.Task.TaskID, err)
	}
	var cancel context.CancelFunc
	if dl, ok := ctx.Deadline(); ok {
		// Give up a little before the registration's deadline, so the
		// refusal (and its reason) still reaches the host.
		margin := min(time.Second, time.Until(dl)/4)
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-margin))
	} else {
		ctx, cancel = context.WithTimeout(ctx, s.cfg.EnvironmentWait)
	}
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		_ = c.Close()
		return wiref("%stask %q: the environment's exec agent at %s did not become ready: %v", task.EnvironmentErrorPrefix, spec.Task.TaskID, addr, err)
	}
	env := spec.Task.Environment
	t.env = &trialEnvironment{addr: addr, c: c, paths: s.cfg.EnvironmentPaths}
	t.env.tools = envtools.New(envtools.Env{Agent: c, Address: addr, Workdir: env.Workdir, Vars: env.Env, User: env.Agent.User})
	return nil
}

// agentTurnOver answers an ExecuteTool on an environment trial whose
// grading began: ERROR (the closest status: the call did not run, and the
// trial is still registered), saying why.
func agentTurnOver(t *trial, name string) *runnerpb.ExecuteToolResponse {
	return &runnerpb.ExecuteToolResponse{
		Status: runnerpb.ExecutionStatus_EXECUTION_STATUS_ERROR,
		ErrorMessage: fmt.Sprintf("Tool '%s' not run: the agent's turn is over: trial '%s' is being graded in its environment, "+
			"whose tools are no longer served", name, t.id),
		Metrics: &runnerpb.ToolMetrics{ExitCode: 1},
	}
}

// errEnvironmentReset is ResetTrial's refusal for an environment trial.
func errEnvironmentReset(t *trial) error {
	return wiref("Trial '%s' cannot be reset: its task runs in its own container, which cannot be reset in place; "+
		"a new attempt gets a new environment pod (clean up and register the trial again)", t.id)
}
