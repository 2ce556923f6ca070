package grading

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "tolokaforge.io/operator/api/execagentpb"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/gradefmt"
	"tolokaforge.io/operator/runner/tools"
)

// EnvironmentExec is a terminal task's environment as the verifier reaches
// it: its exec agent (runner/execagent/client.Client implements the calls).
type EnvironmentExec interface {
	Exec(ctx context.Context, req *pb.ExecRequest) (*pb.ExecResponse, error)
	ReadFile(ctx context.Context, req *pb.ReadFileRequest) (*pb.ReadFileResponse, error)
	PutTar(ctx context.Context, req *pb.PutTarRequest) (*pb.PutTarResponse, error)
	ResetDir(ctx context.Context, req *pb.ResetDirRequest) (*pb.ResetDirResponse, error)
	KillAll(ctx context.Context, req *pb.KillAllRequest) (*pb.KillAllResponse, error)
	// Address names the environment in messages (the exec agent's host:port).
	Address() string
	// Paths are the container's paths the verifier uses.
	Paths() EnvironmentPaths
}

// EnvironmentPaths are the paths of Harbor's layout in a terminal task's
// container; tests whose exec agent runs on the test machine point them at
// a temporary directory.
type EnvironmentPaths struct {
	// Tests receives the task's tests (task.EnvTestsDir).
	Tests string
	// Verifier is where the tests write reward.txt or reward.json
	// (task.EnvVerifierDir).
	Verifier string
	// Solution receives the oracle's solution (task.EnvSolutionDir); the
	// runner does not upload it, the host's oracle does through the tools.
	Solution string
}

// DefaultEnvironmentPaths are Harbor's.
func DefaultEnvironmentPaths() EnvironmentPaths {
	return EnvironmentPaths{Tests: task.EnvTestsDir, Verifier: task.EnvVerifierDir, Solution: task.EnvSolutionDir}
}

// WithDefaults fills the empty paths with Harbor's.
func (p EnvironmentPaths) WithDefaults() EnvironmentPaths {
	d := DefaultEnvironmentPaths()
	if p.Tests == "" {
		p.Tests = d.Tests
	}
	if p.Verifier == "" {
		p.Verifier = d.Verifier
	}
	if p.Solution == "" {
		p.Solution = d.Solution
	}
	return p
}

// Environment verifier limits.
const (
	// defaultEnvVerifierTimeout applies when test_execution.timeout_s is 0 (Harbor's).
	defaultEnvVerifierTimeout = 600 * time.Second
	envKillGrace              = 2 * time.Second
	// envVerifierOutputBytes is what the exec agent keeps of each of the
	// tests' streams (head and tail halves): enough for pytest's summary.
	envVerifierOutputBytes = 1 << 20
	// envReasonOutputBytes is what Grade.reasons keeps of the tests'
	// output (head and tail).
	envReasonOutputBytes = 64 << 10
	// maxRewardJSONBytes bounds reward.json.
	maxRewardJSONBytes = 64 << 10
)

// Reward files of Harbor's verifier directory.
const (
	rewardJSONName = "reward.json"
	rewardTxtName  = "reward.txt"
)

// envError is an infrastructure failure of the environment: its message
// starts with task.EnvironmentErrorPrefix, so the host tells it from a
// grade and from the grader's own errors.
func envError(format string, args ...any) error {
	return &Error{Msg: task.EnvironmentErrorPrefix + fmt.Sprintf(format, args...)}
}

// agentErr describes an exec agent call's failure without the client's
// wrapping noise.
func agentErr(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if st, ok := status.FromError(e); ok {
			return fmt.Sprintf("%s: %s", st.Code(), st.Message())
		}
	}
	return err.Error()
}

// runEnvironmentVerification grades a terminal task after its agent stopped,
// in the task's own container: kill what the agent left (unless
// keep_agent_processes), make the verifier directory empty and real, replace
// /tests with the task's tests, run test_execution.command with a clean
// environment as the verifier's user, kill everything again, then read
// reward.json, else reward.txt, else (parser pytest) the tests' summary. A
// timeout scores 0 (the agent's outcome); an environment that does not
// answer, a failed upload, or a missing or invalid reward is an
// infrastructure failure (envError).
func runEnvironmentVerification(ctx context.Context, g *gradeCtx, ex EnvironmentExec) (grade *runnerpb.Grade, err error) {
	env := g.task.Environment
	te := g.cfg.TestExecution
	if te == nil || len(te.Command) == 0 {
		return nil, notAsAuthored(g.id, "grading_method is test_execution but test_execution.command is empty")
	}
	paths := ex.Paths().WithDefaults()
	where := fmt.Sprintf("the task's environment (exec agent at %s)", ex.Address())
	testsTar, err := buildTestsTar(g.task.ToolArtifacts, env.Verifier.Tests)
	if err != nil {
		return nil, notAsAuthored(g.id, err.Error())
	}
	grace := envKillGrace.Milliseconds()
	// a. Nothing the agent started runs beside the tests.
	if !env.Verifier.KeepAgentProcesses {
		if _, err := ex.KillAll(ctx, &pb.KillAllRequest{GraceMs: grace}); err != nil {
			return nil, envError("%s: kill the agent's processes before the tests: %s", where, agentErr(err))
		}
	}
	// b. A fresh verifier directory (a planted reward goes) and the task's
	// tests in place of whatever /tests holds.
	if _, err := ex.ResetDir(ctx, &pb.ResetDirRequest{Path: paths.Verifier, User: env.Verifier.User}); err != nil {
		return nil, envError("%s: reset %s: %s", where, paths.Verifier, agentErr(err))
	}
	if _, err := ex.PutTar(ctx, &pb.PutTarRequest{DestDir: paths.Tests, Tar: testsTar, Replace: true, User: env.Verifier.User}); err != nil {
		return nil, envError("%s: upload the tests to %s: %s", where, paths.Tests, agentErr(err))
	}
	// c. The tests. From here the verifier ran: every way out is counted.
	timedOut := false
	defer func() {
		outcome := verifierOutcome(grade, err)
		if timedOut {
			outcome = VerifierTimeout
		}
		verifierRan(g.env, outcome)
	}()
	timeout := defaultEnvVerifierTimeout
	if te.TimeoutS > 0 {
		timeout = time.Duration(te.TimeoutS * float64(time.Second))
	}
	workdir := env.Workdir
	if workdir == "" {
		workdir = paths.Tests
	}
	res, err := ex.Exec(ctx, &pb.ExecRequest{
		Argv: te.Command, Workdir: workdir, Env: env.Verifier.Env, CleanEnv: true, User: env.Verifier.User,
		TimeoutMs: timeout.Milliseconds(), KillGraceMs: grace, MaxOutputBytes: envVerifierOutputBytes,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, gradingError(fmt.Errorf("test_execution: grading was cancelled while the tests ran in %s: %w", where, ctx.Err()))
		}
		return nil, envError("%s: run the tests %q: %s", where, te.Command, agentErr(err))
	}
	// d. Nothing the tests started can touch the reward after them.
	if _, err := ex.KillAll(ctx, &pb.KillAllRequest{GraceMs: grace}); err != nil {
		return nil, envError("%s: kill the tests' processes: %s", where, agentErr(err))
	}
	g.opts.log.V(1).Info("environment tests finished", "trial", g.id, "exit_code", res.GetExitCode(), "timed_out", res.GetTimedOut())
	// The tests' whole output (as far as the exec agent kept it) travels
	// beside the grade (GradeTrial's trailer); the host keeps it as an
	// artifact. The reasons keep its head and tail.
	tools.KeepOutput(ctx, wholeTestOutput(res))
	output := envOutput(res)

	threshold := task.DefaultPassThreshold
	if g.cfg.PassThreshold != nil {
		threshold = *g.cfg.PassThreshold
	}
	verdict := func(score float64, how string) *runnerpb.Grade {
		reason := fmt.Sprintf("Environment tests: score=%s (%s)", gradefmt.Score(score), how)
		if env.Verifier.KeepAgentProcesses {
			reason += "; the agent's processes were kept running during the tests (keep_agent_processes)"
		}
		if output != "" {
			reason += "; test output: " + strconv.Quote(output)
		}
		return testsGrade(score, threshold, reason)
	}
	// e/f. The verdict.
	if res.GetTimedOut() {
		timedOut = true
		return verdict(0, fmt.Sprintf("the tests timed out after %s s and were killed", strconv.FormatFloat(timeout.Seconds(), 'g', -1, 64))), nil
	}
	ended := fmt.Sprintf("exit code %d", res.GetExitCode())
	if res.GetSignal() != "" {
		ended = "killed by " + res.GetSignal()
	}
	score, how, found, err := readEnvReward(ctx, ex, paths.Verifier)
	if err != nil {
		return nil, envError("%s: %s", where, err.Error())
	}
	if found {
		return verdict(score, how+", tests "+ended), nil
	}
	if env.Verifier.Parser == task.ParserPytest {
		score, how := pytestScore(res.GetStdout())
		return verdict(score, how+", tests "+ended), nil
	}
	return nil, envError("%s: the tests (%s) wrote neither %s nor %s in %s, and the task names no output parser; output tail: %q",
		where, ended, rewardJSONName, rewardTxtName, paths.Verifier, tailOf(output, reasonTailBytes))
}

// readEnvReward reads reward.json, else reward.txt. found is false when
// neither exists; err is a reward that exists but is no valid reward, or an
// agent that did not answer.
func readEnvReward(ctx context.Context, ex EnvironmentExec, dir string) (score float64, how string, found bool, err error) {
	read := func(name string, limit int64) ([]byte, bool, error) {
		p := path.Join(dir, name)
		resp, err := ex.ReadFile(ctx, &pb.ReadFileRequest{Path: p, MaxBytes: limit})
		if err != nil {
			if status.Code(unwrapGRPC(err)) == codes.NotFound {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("read %s: %s", p, agentErr(err))
		}
		if resp.GetTruncated() {
			return nil, false, fmt.Errorf("%s is %d bytes, more than a reward holds (%d)", p, resp.GetSize(), limit)
		}
		return resp.GetContent(), true, nil
	}
	if b, ok, err := read(rewardJSONName, maxRewardJSONBytes); err != nil {
		return 0, "", false, err
	} else if ok {
		score, how, err := parseRewardJSON(b)
		if err != nil {
			return 0, "", false, fmt.Errorf("%s: %w", path.Join(dir, rewardJSONName), err)
		}
		return score, how + " from " + path.Join(dir, rewardJSONName), true, nil
	}
	if b, ok, err := read(rewardTxtName, maxRewardFileBytes); err != nil {
		return 0, "", false, err
	} else if ok {
		text := strings.TrimSpace(string(b))
		v, perr := strconv.ParseFloat(text, 64)
		if perr != nil || math.IsNaN(v) || v < 0 || v > 1 {
			return 0, "", false, fmt.Errorf("%s holds %s, not a number in [0, 1]", path.Join(dir, rewardTxtName), gradefmt.Quote(text))
		}
		return v, fmt.Sprintf("reward %s from %s", text, path.Join(dir, rewardTxtName)), true, nil
	}
	return 0, "", false, nil
}

func unwrapGRPC(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := status.FromError(e); ok {
			return e
		}
	}
	return err
}

// parseRewardJSON reads a JSON object of named numbers in [0, 1]: the score
// is "reward" when it is named, else their mean; the others are components.
func parseRewardJSON(b []byte) (float64, string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return 0, "", fmt.Errorf("not a JSON object of named numbers: %v", err)
	}
	if dec.More() {
		return 0, "", errors.New("holds more than one JSON value")
	}
	if len(raw) == 0 {
		return 0, "", errors.New("names no reward (an empty object)")
	}
	names := make([]string, 0, len(raw))
	vals := map[string]float64{}
	for k, v := range raw {
		n, ok := v.(json.Number)
		if !ok {
			return 0, "", fmt.Errorf("%q is %s, not a number in [0, 1]", k, gradefmt.Quote(fmt.Sprint(v)))
		}
		f, err := n.Float64()
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return 0, "", fmt.Errorf("%q is %s, not a number in [0, 1]", k, n.String())
		}
		vals[k] = f
		names = append(names, k)
	}
	sort.Strings(names)
	var parts []string
	for _, k := range names {
		if k != "reward" {
			parts = append(parts, k+"="+gradefmt.Score(vals[k]))
		}
	}
	comps := ""
	if len(parts) > 0 {
		comps = "; components: " + strings.Join(parts, ", ")
	}
	if r, ok := vals["reward"]; ok {
		return r, "reward " + gradefmt.Score(r) + comps, nil
	}
	sum := 0.0
	for _, v := range vals {
		sum += v
	}
	mean := sum / float64(len(vals))
	return mean, fmt.Sprintf("mean of %d rewards %s%s", len(vals), gradefmt.Score(mean), comps), nil
}

// pytestLine is one result of pytest's -rA short summary.
var pytestLine = regexp.MustCompile(`^(PASSED|FAILED|ERROR|XFAIL|XPASS)\s+(\S+)`)

// pytestScore reads pytest's -rA short test summary (the lines after
// "short test summary info", or the whole output without that header): 1
// when it lists at least one test and every one PASSED (or XFAIL: failed as
// the test expects), else 0; each test is a named component.
func pytestScore(stdout []byte) (float64, string) {
	text := string(stdout)
	if i := strings.LastIndex(text, "short test summary info"); i >= 0 {
		text = text[i:]
	}
	var parts []string
	passed, total := 0, 0
	for _, line := range strings.Split(text, "\n") {
		m := pytestLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		total++
		if m[1] == "PASSED" || m[1] == "XFAIL" {
			passed++
		}
		parts = append(parts, m[2]+"="+m[1])
	}
	if total == 0 {
		return 0, "pytest summary: no test results found (the tests need pytest -rA)"
	}
	score := 0.0
	if passed == total {
		score = 1
	}
	return score, fmt.Sprintf("pytest summary: %d of %d tests passed; components: %s", passed, total, strings.Join(parts, ", "))
}

// wholeTestOutput is the tests' stdout, then their stderr.
func wholeTestOutput(res *pb.ExecResponse) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "--- stdout (%d bytes) ---\n", res.GetStdoutBytes())
	b.Write(res.GetStdout())
	fmt.Fprintf(&b, "\n--- stderr (%d bytes) ---\n", res.GetStderrBytes())
	b.Write(res.GetStderr())
	return b.Bytes()
}

// envOutput is the tests' stdout then stderr, head and tail within
// envReasonOutputBytes.
func envOutput(res *pb.ExecResponse) string {
	var b strings.Builder
	b.Write(res.GetStdout())
	if len(res.GetStderr()) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("[stderr]\n")
		b.Write(res.GetStderr())
	}
	s := b.String()
	// What the exec agent's per-stream cap already dropped (the middle of
	// each stream).
	dropped := max(res.GetStdoutBytes()-int64(len(res.GetStdout())), 0) + max(res.GetStderrBytes()-int64(len(res.GetStderr())), 0)
	switch {
	case len(s) > envReasonOutputBytes:
		half := envReasonOutputBytes / 2
		s = s[:half] + fmt.Sprintf("\n[... %d bytes cut ...]\n", int64(len(s)-2*half)+dropped) + s[len(s)-half:]
	case dropped > 0:
		s = fmt.Sprintf("[%d bytes from the middle of the output were cut] ", dropped) + s
	}
	return strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[len(s)-n:], "")
}

// buildTestsTar is the tar uploaded to the tests directory: for each entry
// of environment.verifier.tests, a folder of the task's files (its
// tool_artifacts, as registered) contributes its contents, a file itself
// by its base name. The tool_artifacts carry no modes: every file is 0755
// (as the runner unpacks them), so a test script runs directly too.
func buildTestsTar(artifacts map[string]string, tests []string) ([]byte, error) {
	files := map[string][]byte{}
	names := make([]string, 0, len(artifacts))
	for k := range artifacts {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, t := range tests {
		matched := false
		for _, name := range names {
			clean := path.Clean(name)
			var dest string
			switch {
			case clean == t:
				dest = path.Base(t)
			case t == "." || strings.HasPrefix(clean, t+"/"):
				dest = strings.TrimPrefix(clean, t+"/")
			default:
				continue
			}
			data, err := base64.StdEncoding.DecodeString(artifacts[name])
			if err != nil {
				return nil, fmt.Errorf("task.tool_artifacts[%q]: not base64: %v", name, err)
			}
			files[dest] = data
			matched = true
		}
		if !matched {
			return nil, fmt.Errorf("environment.verifier.tests names %q, which is no file or folder of the task's files (tool_artifacts)", t)
		}
	}
	dests := make([]string, 0, len(files))
	for d := range files {
		dests = append(dests, d)
	}
	sort.Strings(dests)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, d := range dests {
		// Parent folders first, each once.
		var parents []string
		for p := path.Dir(d); p != "." && !dirs[p]; p = path.Dir(p) {
			parents = append([]string{p}, parents...)
		}
		for _, p := range parents {
			dirs[p] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: 0o755}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: d, Mode: 0o755, Size: int64(len(files[d]))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[d]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
