package task

import (
	"path"
	"regexp"
	"sort"
	"strings"
)

// Environment is a terminal task's own container: the image the task's
// author published (Harbor's environment/ or Terminal-Bench's Dockerfile,
// or a docker_image given as is), what it may use, and how its agent and
// verifier run inside it. It is our extension of the TaskDescription (key
// "environment"), present exactly when adapter_type is terminal_bench: the
// manager runs the image in a pod of its own per attempt, with our exec
// agent as its entrypoint, and the runner executes the agent's tools, the
// oracle's solution and the verifier there, never in its own filesystem.
//
// The verifier's command, reward file and timeout are grading.test_execution
// (grading_method test_execution); Environment.Verifier says who runs it
// and where its files come from.
type Environment struct {
	// Image is the reference the node pulls (a digest-pinned
	// "registry/name[:tag]@sha256:..." once `pack build` built it or pinned
	// the task's own tag, or as the task gave it). Empty while the task
	// still has to be built (Build set).
	Image string `json:"image,omitempty"`
	// Build is the Dockerfile the task ships, for `pack build`; the manager
	// never builds.
	Build *EnvironmentBuild `json:"build,omitempty"`
	// BuildTimeoutS bounds how long the environment pod may take to become
	// Ready (pull, start) before the attempt is an infrastructure failure.
	BuildTimeoutS float64 `json:"build_timeout_s,omitempty"`
	// CPUs, MemoryMB and StorageMB are the pod's requests and limits.
	CPUs      float64 `json:"cpus,omitempty"`
	MemoryMB  int64   `json:"memory_mb,omitempty"`
	StorageMB int64   `json:"storage_mb,omitempty"`
	// AllowInternet lets the environment reach beyond the cluster; without
	// it the pod's egress is denied.
	AllowInternet bool `json:"allow_internet,omitempty"`
	// Workdir is the directory commands start in (the image's WORKDIR when
	// empty: the exec agent's own working directory).
	Workdir string `json:"workdir,omitempty"`
	// Env is added to the environment of every agent command.
	Env map[string]string `json:"env,omitempty"`
	// Agent is how the agent's commands run.
	Agent EnvironmentActor `json:"agent"`
	// Verifier is how the tests run once the agent stopped.
	Verifier EnvironmentVerifier `json:"verifier"`
	// Solution is the oracle's: its files and the command that applies them.
	Solution *EnvironmentSolution `json:"solution,omitempty"`
}

// EnvironmentBuild names the build context in the task's files.
type EnvironmentBuild struct {
	// Context is the build context: a folder of the task's files
	// (tool_artifacts paths below it), "environment" for Harbor.
	Context string `json:"context"`
	// Dockerfile is the Dockerfile's path in the task's files.
	Dockerfile string `json:"dockerfile"`
}

// EnvironmentActor is who runs a side's commands and for how long.
type EnvironmentActor struct {
	// User is a user name or uid in the image; empty is the image's user.
	User string `json:"user,omitempty"`
	// TimeoutS bounds the side's whole run (the agent's loop, in wall
	// seconds); 0 is no bound beyond the Trial's own.
	TimeoutS float64 `json:"timeout_s,omitempty"`
}

// EnvironmentVerifier is how the tests arrive and run.
type EnvironmentVerifier struct {
	EnvironmentActor `json:",inline"`
	// Env is the verifier's whole environment besides PATH and HOME: it
	// starts clean, never with what the agent exported.
	Env map[string]string `json:"env,omitempty"`
	// Tests are the task's files uploaded to /tests once the agent stopped:
	// a folder's contents, or a file by its base name (Harbor: ["tests"];
	// Terminal-Bench 1: ["tests", "run-tests.sh"]).
	Tests []string `json:"tests"`
	// Parser reads the verifier's output when it writes no reward file:
	// "pytest" (Terminal-Bench 1: the score is 1 when every test in pytest's
	// -rA summary passed, each test a named component) or empty (a reward
	// file is required).
	Parser string `json:"parser,omitempty"`
	// KeepAgentProcesses leaves what the agent started running while the
	// tests run (for tests that need the agent's servers); by default every
	// process the agent left is killed first, and a grade of a task that
	// keeps them says so.
	KeepAgentProcesses bool `json:"keep_agent_processes,omitempty"`
}

// EnvironmentSolution is the oracle's path for a terminal task.
type EnvironmentSolution struct {
	// Files are the task's files uploaded to /solution, as Tests are to
	// /tests.
	Files []string `json:"files"`
	// Command runs the solution (as the agent's user, from the workdir).
	Command []string `json:"command"`
}

// Paths in the environment's container (Harbor's layout).
const (
	EnvTestsDir    = "/tests"
	EnvSolutionDir = "/solution"
	EnvVerifierDir = "/logs/verifier"
	EnvAgentLogs   = "/logs/agent"
	// ParserPytest is Terminal-Bench 1's test output parser.
	ParserPytest = "pytest"
	// Harbor's defaults.
	DefaultEnvCPUs          = 1
	DefaultEnvMemoryMB      = 2048
	DefaultEnvStorageMB     = 10240
	DefaultEnvBuildTimeoutS = 600
)

// EnvironmentErrorPrefix starts every error the runner reports when a
// terminal task's environment failed rather than the agent: the exec agent
// did not answer, the tests could not be uploaded, the verifier wrote no
// (or no valid) reward. GradeTrialResponse.error and a tool call's
// error_message carry it; the host tells an infrastructure failure from a
// grade or a tool result by it (IsEnvironmentError).
const EnvironmentErrorPrefix = "Environment error: "

// IsEnvironmentError says whether msg (a GradeTrialResponse.error or a tool
// call's error_message) reports an environment failure.
func IsEnvironmentError(msg string) bool { return strings.HasPrefix(msg, EnvironmentErrorPrefix) }

// AdapterTerminalBench is the adapter type of a task with an Environment.
const AdapterTerminalBench = adapterTerminalBench

// HasEnvironment says the task runs in its own container.
func (t *TaskDescription) HasEnvironment() bool { return t.Environment != nil }

func (e *Environment) applyDefaults() {
	if e.CPUs == 0 {
		e.CPUs = DefaultEnvCPUs
	}
	if e.MemoryMB == 0 {
		e.MemoryMB = DefaultEnvMemoryMB
	}
	if e.StorageMB == 0 {
		e.StorageMB = DefaultEnvStorageMB
	}
	if e.BuildTimeoutS == 0 {
		e.BuildTimeoutS = DefaultEnvBuildTimeoutS
	}
}

var (
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// envUser is a user name or uid as /etc/passwd and useradd allow them.
	envUser = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$`)
	// imageRef is a container image reference: name[:tag][@digest], no spaces.
	imageRef = regexp.MustCompile(`^[a-z0-9]+([._/:@-][A-Za-z0-9_.-]+)*$`)
)

func (e *Environment) validate(c *checker, p string) {
	if e.Image == "" && e.Build == nil {
		c.failf(joinKey(p, "image"), "required unless build names the Dockerfile to build it from")
	}
	if e.Image != "" && (len(e.Image) > 512 || !imageRef.MatchString(e.Image)) {
		c.failf(joinKey(p, "image"), "%q is not an image reference (name[:tag][@sha256:digest])", e.Image)
	}
	if b := e.Build; b != nil {
		bp := joinKey(p, "build")
		c.relPath(joinKey(bp, "context"), b.Context, true)
		c.relPath(joinKey(bp, "dockerfile"), b.Dockerfile, false)
	}
	c.seconds(joinKey(p, "build_timeout_s"), e.BuildTimeoutS)
	if !(e.CPUs > 0 && e.CPUs <= 64) {
		c.failf(joinKey(p, "cpus"), "%v is outside (0, 64]", e.CPUs)
	}
	if e.MemoryMB < 16 || e.MemoryMB > 1<<20 {
		c.failf(joinKey(p, "memory_mb"), "%d is outside [16, 1048576]", e.MemoryMB)
	}
	if e.StorageMB < 1 || e.StorageMB > 1<<22 {
		c.failf(joinKey(p, "storage_mb"), "%d is outside [1, 4194304]", e.StorageMB)
	}
	if e.Workdir != "" && (!path.IsAbs(e.Workdir) || path.Clean(e.Workdir) != e.Workdir) {
		c.failf(joinKey(p, "workdir"), "%q is not a clean absolute path", e.Workdir)
	}
	c.envVars(joinKey(p, "env"), e.Env)
	e.Agent.validate(c, joinKey(p, "agent"))
	vp := joinKey(p, "verifier")
	e.Verifier.EnvironmentActor.validate(c, vp)
	c.envVars(joinKey(vp, "env"), e.Verifier.Env)
	c.relPaths(joinKey(vp, "tests"), e.Verifier.Tests)
	c.enum(joinKey(vp, "parser"), e.Verifier.Parser, []string{ParserPytest})
	if s := e.Solution; s != nil {
		sp := joinKey(p, "solution")
		c.relPaths(joinKey(sp, "files"), s.Files)
		if len(s.Command) == 0 {
			c.failf(joinKey(sp, "command"), "required")
		}
	}
}

func (a *EnvironmentActor) validate(c *checker, p string) {
	if a.User != "" && !envUser.MatchString(a.User) {
		c.failf(joinKey(p, "user"), "%q is not a user name or uid", a.User)
	}
	c.seconds(joinKey(p, "timeout_s"), a.TimeoutS)
}

func (c *checker) envVars(p string, env map[string]string) {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !envName.MatchString(k) {
			c.failf(joinKey(p, k), "%q is not an environment variable name", k)
		}
		if strings.ContainsRune(env[k], 0) {
			c.failf(joinKey(p, k), "holds a NUL byte")
		}
	}
}

func (c *checker) relPaths(p string, vs []string) {
	if len(vs) == 0 {
		c.failf(p, "required")
	}
	for i, v := range vs {
		c.relPath(joinIndex(p, i), v, true)
	}
}

// relPath checks a clean relative path of the task's files ("." allowed
// for a folder).
func (c *checker) relPath(p, v string, folder bool) {
	switch {
	case v == "":
		c.failf(p, "required")
	case strings.HasPrefix(v, "/") || path.Clean(v) != v || v == ".." || strings.HasPrefix(v, "../"):
		c.failf(p, "%q is not a clean path relative to the task's files", v)
	case v == "." && !folder:
		c.failf(p, "%q names a folder, not a file", v)
	}
}

// validateEnvironment ties the environment to its adapter and grading: only
// a terminal_bench task has one, and it is graded by its tests there.
func (t *TaskDescription) validateEnvironment(c *checker, path string) {
	p := joinKey(path, "environment")
	// A terminal_bench task without one decodes (the reference's payloads
	// carry docker_compose_exec tools instead), and CheckRunnable refuses
	// those tools.
	switch {
	case t.AdapterType != adapterTerminalBench && t.Environment != nil:
		c.failf(p, "only allowed with adapter_type terminal_bench")
		return
	case t.Environment == nil:
		return
	}
	t.Environment.validate(c, p)
	if t.Grading == nil || t.Grading.GradingMethod != GradingTestExecution {
		c.failf(joinKey(joinKey(path, "grading"), "grading_method"), "a task with an environment is graded by its tests: test_execution")
	}
	for i, ts := range t.AgentTools {
		if ts.Source != nil {
			c.failf(joinKey(joinIndex(joinKey(path, "agent_tools"), i), "source"), "a task with an environment offers only the environment's tools (bash, read_file, write_file, list_dir), which have no source")
		}
	}
}

// EnvironmentToolNames are the tools a task with an environment offers its
// agent, all executed in the environment's container by the exec agent.
var EnvironmentToolNames = []string{"bash", "read_file", "write_file", "list_dir"}

// EnvironmentTools are their schemas (builtins: no source), the ones a
// terminal task's import gives its agent.
func EnvironmentTools() []ToolSchema {
	obj := func(props, required string) []byte {
		return []byte(`{"type":"object","properties":{` + props + `},"required":[` + required + `],"additionalProperties":false}`)
	}
	return []ToolSchema{
		{Name: "bash", Description: "Run a command with bash in the task's container (from the working directory; background processes keep running). Returns the exit code and the command's output (long output keeps its head and tail).",
			Parameters: obj(`"command":{"type":"string","description":"the command line"},"timeout_s":{"type":"number","description":"seconds before the command is killed (default 120, at most 1800)"}`, `"command"`)},
		{Name: "read_file", Description: "Read a text file in the task's container.",
			Parameters: obj(`"path":{"type":"string","description":"absolute, or relative to the working directory"}`, `"path"`)},
		{Name: "write_file", Description: "Write a file in the task's container (replaced whole; parent folders created).",
			Parameters: obj(`"path":{"type":"string","description":"absolute, or relative to the working directory"},"content":{"type":"string"}`, `"path","content"`)},
		{Name: "list_dir", Description: "List a folder in the task's container.",
			Parameters: obj(`"path":{"type":"string","description":"absolute, or relative to the working directory (default: the working directory)"}`, ``)},
	}
}

// EnvironmentUpload is one of the task's files bound for the container.
type EnvironmentUpload struct {
	// Artifact is its key in tool_artifacts; Path where it lands.
	Artifact, Path string
}

// EnvironmentUploads lays sources (Verifier.Tests or Solution.Files: a
// folder's contents, or a file by its base name) of the task's files
// (tool_artifacts keys) out under dest ("/tests"), sorted by path. The
// oracle and the runner's verifier both upload through it, so what the
// tests see is what the import shipped.
func EnvironmentUploads(sources []string, artifacts map[string]string, dest string) []EnvironmentUpload {
	var out []EnvironmentUpload
	seen := map[string]bool{}
	for _, src := range sources {
		for key := range artifacts {
			var rel string
			switch {
			case key == src:
				rel = path.Base(key)
			case src == ".":
				rel = key
			case strings.HasPrefix(key, src+"/"):
				rel = strings.TrimPrefix(key, src+"/")
			default:
				continue
			}
			p := path.Join(dest, rel)
			if !seen[p] {
				seen[p] = true
				out = append(out, EnvironmentUpload{Artifact: key, Path: p})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
