package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/runner/tools"
	"tolokaforge.io/operator/runner/tools/builtin"
	"tolokaforge.io/operator/runner/tools/envtools"
	"tolokaforge.io/operator/runner/tools/pyhost"
)

// RegisterTrial implements RunnerService.RegisterTrial.
func (s *Server) RegisterTrial(ctx context.Context, req *runnerpb.RegisterTrialRequest) (*runnerpb.RegisterTrialResponse, error) {
	resp, err := s.register(ctx, req)
	if errors.Is(err, client.ErrUnavailable) {
		// The DB service could not be reached: an infrastructure fault, told
		// as ExecuteTool tells it (UNAVAILABLE), not as a refused task.
		s.log.Error(err, "registration failed: DB service unavailable", "trial", req.GetTrialId())
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	if err != nil {
		s.log.Info("registration refused", "trial", req.GetTrialId(), "error", err.Error())
		return &runnerpb.RegisterTrialResponse{Success: false, Error: err.Error()}, nil
	}
	// How this trial's tools and checks are confined, for the Trial's
	// Confined condition; a host that reads no trailer loses nothing.
	if err := grpc.SetTrailer(ctx, runnerpb.ConfinementMD(s.landlockABI)); err != nil {
		s.log.V(1).Info("confinement trailer not set", "trial", req.GetTrialId(), "error", err.Error())
	}
	return resp, nil
}

// registration tracks what a RegisterTrial created so a failure can remove it.
type registration struct {
	s       *Server
	t       *trial
	dbMade  bool
	dirMade bool
}

func (r *registration) undo() {
	// The host may have gone away; the undo must still run to the end.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.s.teardown(ctx, r.t, r.dbMade, r.dirMade); err != nil {
		r.t.log.Error(err, "undo a failed registration")
	}
}

func (s *Server) register(ctx context.Context, req *runnerpb.RegisterTrialRequest) (*runnerpb.RegisterTrialResponse, error) {
	if v := req.GetEngineProtocolVersion(); v < s.cfg.MinEngineProtocol {
		return nil, fmt.Errorf("engine protocol version %d is below %d, the minimum this runner accepts: "+
			"rebuild the runner image from the engine you are running, or pin an image tag that matches it", v, s.cfg.MinEngineProtocol)
	}
	id := req.GetTrialId()
	if id == "" {
		return nil, errors.New("trial_id is required")
	}
	specJSON := []byte(req.GetTrialSpecJson())
	spec, err := task.DecodeTrialSpec(specJSON)
	if err != nil {
		return nil, wiref("Invalid trial_spec_json: %v", err)
	}
	if spec.TrialID != "" && spec.TrialID != id {
		return nil, wiref("Invalid trial_spec_json: trial_id: %q does not match the request's trial_id %q", spec.TrialID, id)
	}
	if err := grading.CheckTestExecution(spec); err != nil {
		return nil, wiref("Invalid trial_spec_json: %v", err)
	}
	// A slot's host sends the trial's judge key with the call (no per-Trial
	// file can be mounted into a pod that outlives the Trial). It lives in
	// this trial's memory only: never logged, never written, never in an error.
	judgeKey, _ := runnerpb.JudgeKeyFromIncoming(ctx)
	if jc, ok := s.cfg.Grader.(grading.JudgeChecker); ok {
		if err := jc.CheckJudge(spec, judgeKey); err != nil {
			return nil, wiref("Invalid trial_spec_json: %v", err)
		}
	}
	envToken, err := s.environmentToken(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.checkEnvironment(spec, envToken); err != nil {
		return nil, err
	}
	defS := req.GetDefaultToolTimeoutS()
	if defS < 0 || math.IsNaN(defS) || math.IsInf(defS, 0) {
		return nil, fmt.Errorf("default_tool_timeout_s: %v must be a finite number >= 0", defS)
	}
	def := tools.Budget(0, 0, tools.Seconds(defS))
	url := s.cfg.DBServiceURL
	if spec.EnvEndpoints != nil && spec.EnvEndpoints.DBServiceURL != "" {
		url = spec.EnvEndpoints.DBServiceURL
	}
	if url == "" {
		return nil, errors.New("no DB service: the trial spec's env_endpoints.db_service_url is empty and the runner was started without --db-service-url")
	}

	if err := s.reserve(id); err != nil {
		return nil, err
	}
	defer s.release(id)

	dir, err := os.MkdirTemp(s.cfg.WorkDir, dirName(id)+"-")
	if err != nil {
		return nil, fmt.Errorf("create trial directory: %w", err)
	}
	s.setPendingDir(id, dir)
	lay := newLayout(dir)
	t := &trial{
		id: id, spec: spec, log: s.log.WithValues("trial", id),
		dir: dir, filesDir: lay.files, defaultTimeout: def, judgeKey: judgeKey,
		agent: tools.NewRegistry(), user: tools.NewRegistry(),
		calls: map[string]*callEntry{},
	}
	reg := &registration{s: s, t: t, dirMade: true}
	ok := false
	defer func() {
		if !ok {
			reg.undo()
		}
	}()

	agentPlans, userPlans, err := s.planTools(spec, declaredFields(specJSON), def, lay)
	if err != nil {
		return nil, err
	}
	st := spec.Task.InitialState // may be nil: no tables, no files
	if err := provision(lay, spec.Task.ToolArtifacts, filesystemOf(st)); err != nil {
		return nil, fmt.Errorf("provision trial directory: %w", err)
	}

	if spec.Task.Environment != nil {
		if err := s.connectEnvironment(ctx, t, envToken); err != nil {
			return nil, err
		}
	}

	c := s.dbClient(url)
	t.db = newTrialDB(c, url, id)
	initResp, err := s.initDB(ctx, c, id, st)
	if err != nil {
		return nil, err
	}
	reg.dbMade = true
	t.db.observe(initResp.Version)

	if err := s.buildTools(ctx, t, lay, agentPlans, userPlans, tablesOf(st)); err != nil {
		return nil, err
	}
	if err := s.runInitActions(ctx, t); err != nil {
		return nil, err
	}
	if err := s.publish(t); err != nil {
		return nil, err
	}
	ok = true
	t.log.Info("trial registered", "agent_tools", t.agent.Len(), "user_tools", t.user.Len(), "mcp_servers", len(t.sessions))
	return &runnerpb.RegisterTrialResponse{
		Success:       true,
		ToolSchemas:   append(toolSchemas(t.agent), toolSchemas(t.user)...),
		NumAgentTools: int32(t.agent.Len()),
		NumUserTools:  int32(t.user.Len()),
	}, nil
}

// reserve claims a trial id for the duration of its registration: an id that
// is registered, or being registered by a concurrent call, is refused rather
// than silently overwritten.
func (s *Server) reserve(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return errors.New("runner is draining: no new trials")
	}
	if _, ok := s.trials[id]; ok {
		return wiref("Trial '%s' is already registered", id)
	}
	if _, ok := s.registering[id]; ok {
		return wiref("Trial '%s' is already registered (its registration or cleanup is in progress)", id)
	}
	s.registering[id] = struct{}{}
	return nil
}

func (s *Server) release(id string) {
	s.mu.Lock()
	delete(s.registering, id)
	delete(s.pendingDirs, id)
	s.mu.Unlock()
}

// setPendingDir records the directory of a trial id in registering.
func (s *Server) setPendingDir(id, dir string) {
	s.mu.Lock()
	s.pendingDirs[id] = dir
	s.mu.Unlock()
}

func (s *Server) publish(t *trial) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return errors.New("runner is draining: no new trials")
	}
	s.trials[t.id] = t
	return nil
}

// initDB creates the trial in its DB service. A trial of that id already
// there belongs to nobody in this runner (the registry refused duplicates
// above), e.g. left by a runner that died mid-trial; it is replaced so the
// host's retry with the same id can proceed.
func (s *Server) initDB(ctx context.Context, c *client.Client, id string, st *task.InitialState) (*client.InitResponse, error) {
	// The first requests to a new DB service: it is Ready, but a
	// NetworkPolicy implementation may admit this runner's connections to it
	// a moment later, so those refused before they were sent are retried.
	c = c.WaitingToConnect(s.cfg.DBConnectWait)
	req := st.DBInit()
	resp, err := c.Init(ctx, id, req)
	if errors.Is(err, client.ErrTrialAlreadyExists) {
		s.log.Info("replacing a DB trial no registration owns", "trial", id)
		if derr := c.Delete(ctx, id); derr != nil && !errors.Is(derr, client.ErrTrialNotFound) {
			return nil, dbInitFailed(derr)
		}
		resp, err = c.Init(ctx, id, req)
	}
	if err != nil {
		return nil, dbInitFailed(err)
	}
	return resp, nil
}

// buildTools starts the trial's MCP servers (one per distinct launch), checks
// that every declared MCP tool exists on its server, pushes the initial tables
// into stateful servers, and fills both registries in declaration order.
func (s *Server) buildTools(ctx context.Context, t *trial, lay layout, agentPlans, userPlans []toolPlan, initial map[string]json.RawMessage) error {
	// The Python tools' bound, for every tool: a result over it is a tool
	// error naming its size and the limit.
	maxOutput, err := maxToolOutput(t.spec.Task.Metadata)
	if err != nil {
		return err
	}
	t.maxOutput = maxOutput
	if t.maxOutput == 0 {
		t.maxOutput = pyhost.DefaultMaxOutput
	}
	sessions := map[string]*mcpSession{}
	remoteTools := map[string]map[string]json.RawMessage{}
	for _, p := range append(append([]toolPlan(nil), agentPlans...), userPlans...) {
		if p.mcp == nil {
			continue
		}
		if _, ok := sessions[p.mcp.key]; ok {
			continue
		}
		cfg := p.mcp.cfg
		cfg.Logger = t.log.WithName("mcp")
		cfg.MaxOutput = t.maxOutput
		sess, err := startSession(ctx, p.mcp.key, cfg, t.db, t.log)
		if err != nil {
			return fmt.Errorf("%s (%s): start MCP server %s: %w", p.path, p.schema.Name, describeLaunch(cfg.Command, cfg.URL), err)
		}
		sessions[p.mcp.key] = sess
		t.sessions = append(t.sessions, sess)
		infos, err := sess.srv.StartTools()
		if err != nil {
			return fmt.Errorf("%s (%s): list tools of MCP server %s: %w", p.path, p.schema.Name, describeLaunch(cfg.Command, cfg.URL), err)
		}
		byName := map[string]json.RawMessage{}
		for _, in := range infos {
			byName[in.Name] = in.InputSchema
		}
		remoteTools[p.mcp.key] = byName
		if sess.stateful {
			if err := sess.setTables(ctx, initial, t.db.Version()); err != nil {
				return fmt.Errorf("%s (%s): push the initial tables: %w", p.path, p.schema.Name, err)
			}
		}
	}
	pyInfos, err := s.startPython(ctx, t, lay, append(append([]toolPlan(nil), agentPlans...), userPlans...), initial)
	if err != nil {
		return err
	}
	env := builtin.Env{Store: t.db, Root: lay.files}
	var envTools *envtools.Set
	if t.env != nil {
		envTools = t.env.tools
	}
	for _, side := range []struct {
		plans []toolPlan
		reg   *tools.Registry
	}{{agentPlans, t.agent}, {userPlans, t.user}} {
		for _, p := range side.plans {
			e, err := s.entry(p, env, envTools, sessions, remoteTools, t.py, pyInfos)
			if err != nil {
				return fmt.Errorf("%s (%s): %w", p.path, p.schema.Name, err)
			}
			if err := side.reg.Add(e); err != nil {
				return fmt.Errorf("%s: %w", p.path, err)
			}
		}
	}
	return nil
}

func (s *Server) entry(p toolPlan, env builtin.Env, envTools *envtools.Set, sessions map[string]*mcpSession, remote map[string]map[string]json.RawMessage, py *pySession, pyInfos map[string]pyhost.Info) (*tools.Entry, error) {
	e := &tools.Entry{
		Name:        p.schema.Name,
		Description: p.schema.Description,
		Category:    p.schema.Category,
		Timeout:     p.timeout,
		Validator:   p.validator,
	}
	params := p.schema.Parameters
	switch {
	case p.env != "":
		// A terminal task's tool: executed in its container.
		if envTools == nil {
			return nil, fmt.Errorf("the environment's tool %q has no environment", p.env)
		}
		tool, _ := envTools.Tool(p.env)
		e.Adapter = envtools.Adapter
		e.Tool = tool
		sch, _ := envtools.Schema(p.env)
		if !hasParameters(params) {
			params = sch.Parameters
		}
		if e.Description == "" {
			e.Description = sch.Description
		}
	case p.builtin != nil:
		e.Adapter = tools.AdapterBuiltin
		e.Tool = p.builtin.New(env)
		e.Inline = p.builtin.Cooperative
		if !hasParameters(params) {
			params = p.builtin.Parameters
		}
		if e.Description == "" {
			e.Description = p.builtin.Description
		}
	case p.py != nil:
		var err error
		if params, err = pythonEntry(e, p, py, pyInfos[p.schema.Name]); err != nil {
			return nil, err
		}
	case p.mcp != nil:
		e.Adapter = tools.AdapterMCPServer
		offered := remote[p.mcp.key]
		schema, ok := offered[p.remote]
		if !ok {
			names := make([]string, 0, len(offered))
			for n := range offered {
				if n != stateGetTool && n != stateSetTool {
					names = append(names, n)
				}
			}
			sort.Strings(names)
			return nil, fmt.Errorf("the MCP server offers no tool %q; it offers: %s", p.remote, strings.Join(names, ", "))
		}
		e.Tool = &mcpTool{sess: sessions[p.mcp.key], remote: p.remote, readOnly: p.schema.Category == task.CategoryRead}
		if !hasParameters(params) {
			params = schema
			v, err := tools.NewValidator(schema)
			if err != nil {
				return nil, fmt.Errorf("the MCP server's input schema for %q: %w", p.remote, err)
			}
			e.Validator = v
		}
	}
	var buf bytes.Buffer
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if err := json.Compact(&buf, params); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	e.Parameters = buf.Bytes()
	return e, nil
}

// runInitActions executes the task's initialization_actions through the
// registry their env_type names (assistant -> agent, user -> user). They are
// set-up, not calls either actor made, so they are not recorded.
func (s *Server) runInitActions(ctx context.Context, t *trial) error {
	for i, a := range t.spec.Task.InitializationActions {
		executor := task.ExecutorAgent
		if a.EnvType == task.EnvUser {
			executor = task.ExecutorUser
		}
		path := fmt.Sprintf("task.initialization_actions[%d]", i)
		e, ok := t.registry(executor).Lookup(a.ToolName)
		if !ok {
			return fmt.Errorf("%s: tool %q not found in %s tools (env_type %q routes there)", path, a.ToolName, executor, a.EnvType)
		}
		args, verr := e.Validator.Validate(a.Arguments)
		if verr != nil {
			return fmt.Errorf("%s (%s): invalid arguments: %w", path, a.ToolName, verr)
		}
		out := tools.Invoke(ctx, e, args, e.Timeout)
		if out.Status != task.ToolCallSuccess {
			return fmt.Errorf("%s (%s) failed: %s: %s", path, a.ToolName, out.Status, out.Message)
		}
	}
	return nil
}

func toolSchemas(r *tools.Registry) []*runnerpb.ToolSchema {
	out := make([]*runnerpb.ToolSchema, 0, r.Len())
	for _, e := range r.Entries() {
		out = append(out, &runnerpb.ToolSchema{
			Name:           e.Name,
			Description:    e.Description,
			ParametersJson: string(e.Parameters),
			Category:       string(e.Category),
			TimeoutS:       e.Timeout.Seconds(),
		})
	}
	return out
}

func filesystemOf(st *task.InitialState) map[string]string {
	if st == nil {
		return nil
	}
	return st.Filesystem
}

func tablesOf(st *task.InitialState) map[string]json.RawMessage {
	if st == nil || st.Tables == nil {
		return map[string]json.RawMessage{}
	}
	return st.Tables
}

func describeLaunch(argv []string, url string) string {
	if url != "" {
		return url
	}
	return fmt.Sprintf("%q", argv)
}

// dirName makes a trial id safe as a directory name prefix.
func dirName(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	return "trial-" + b.String()
}
