package pack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	yaml "go.yaml.in/yaml/v3"

	"tolokaforge.io/operator/api/task"
)

// Terminal tasks come in two layouts, both run in the task's own container
// (task.Environment):
//
//   - Harbor's (Terminal-Bench 2 and most new agent benchmarks):
//     instruction.md, task.toml, environment/Dockerfile, tests/test.sh,
//     solution/solve.sh.
//   - Terminal-Bench 1's: task.yaml with instruction, run-tests.sh,
//     solution.sh, docker-compose.yaml, Dockerfile, tests/.
//
// The folder name is the task id; the instruction is the task and the
// agent's first message; the agent gets bash and file tools executed in
// the container; tests and solution are shipped in the task's files (never
// in the container until the verifier or the oracle uploads them). Every
// key of task.toml and task.yaml is mapped, kept (metadata) or refused by
// name (KEYS.md).

const (
	harborTaskFile    = "task.toml"
	harborInstruction = "instruction.md"
	harborTestScript  = "tests/test.sh"
	harborSolveScript = "solution/solve.sh"
	tbenchSolution    = "solution.sh"
	envSystemPrompt   = "You are working in a Linux container on the task in the user message. Use the bash tool to run commands, and the file tools to read and write files. The task is checked by tests after you stop: finish the work, then reply without calling a tool."
	// Harbor's defaults, where task.toml is silent.
	harborAgentTimeoutS    = 600
	harborVerifierTimeoutS = 600
	// Terminal-Bench 1's defaults (max_agent_timeout_sec, max_test_timeout_sec).
	tb1AgentTimeoutS = 360
	tb1TestTimeoutS  = 60
	// bashToolTimeoutS bounds one bash call (the command's own timeout_s
	// argument is at most this).
	bashToolTimeoutS = 1800
)

// isHarbor says a folder without task.yaml is a Harbor task.
func (c *converter) isHarbor() (bool, error) {
	for _, f := range []string{harborTaskFile, harborInstruction} {
		if ok, err := c.exists(f); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// harbor converts a Harbor task folder.
func (c *converter) harbor() error {
	data, err := c.read(harborInstruction)
	if err != nil {
		return err
	}
	instr := string(data)
	if strings.TrimSpace(instr) == "" {
		return fmt.Errorf("%s: empty: the instruction is the task", c.file(harborInstruction))
	}
	env := &task.Environment{
		Verifier: task.EnvironmentVerifier{Tests: []string{"tests"}},
	}
	c.envTask(instr, env)
	if c.out.Name == "" {
		return fmt.Errorf("%s: the folder name %q has no letters or digits to name a Task with", c.name, c.name)
	}
	toml, err := c.readTOML()
	if err != nil {
		return err
	}
	if err := c.taskTOML(toml, env, harborAgentTimeoutS, harborVerifierTimeoutS); err != nil {
		return err
	}
	if ok, err := c.exists(harborTestScript); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%s: a Harbor task needs %s (the verifier, writing /logs/verifier/reward.txt or reward.json)", c.name, harborTestScript)
	}
	if err := c.shipTree("tests"); err != nil {
		return err
	}
	c.td.Grading.TestExecution.Command = []string{"bash", task.EnvTestsDir + "/test.sh"}
	if ok, err := c.exists(harborSolveScript); err != nil {
		return err
	} else if ok {
		if err := c.shipTree("solution"); err != nil {
			return err
		}
		env.Solution = &task.EnvironmentSolution{Files: []string{c.art("solution")}, Command: []string{"bash", task.EnvSolutionDir + "/solve.sh"}}
	} else {
		c.rep.add(c.file(harborSolveScript), "", "absent: the task has no oracle solution")
	}
	env.Verifier.Tests = []string{c.art("tests")}
	if err := c.dockerfile(env, "environment/Dockerfile", "environment"); err != nil {
		return err
	}
	if ok, err := c.exists("environment/docker-compose.yaml"); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%s: refused: a docker-compose environment (several containers) is not supported; the task's environment is one image (environment/Dockerfile or [environment] docker_image)", c.file("environment/docker-compose.yaml"))
	}
	return c.needImage(env)
}

// envTask fills what every terminal task shares.
func (c *converter) envTask(instr string, env *task.Environment) {
	td := &c.td
	td.TaskID, td.Name = c.name, c.name
	td.Category = "terminal"
	td.Description = instr
	td.AdapterType = task.AdapterTerminalBench
	td.SystemPrompt = envSystemPrompt
	td.AgentTools = task.EnvironmentTools()
	for i := range td.AgentTools {
		td.AgentTools[i].TimeoutS = task.DefaultToolTimeoutS
		if td.AgentTools[i].Name == "bash" {
			td.AgentTools[i].TimeoutS = bashToolTimeoutS
		}
	}
	td.UserTools = []task.ToolSchema{}
	td.Environment = env
	c.out.InitialUserMessage = instr
	c.out.Name = objectName(c.name)
	one := 1.0
	td.Grading = &task.GradingConfig{
		GradingMethod: task.GradingTestExecution,
		PassThreshold: &one,
		TestExecution: &task.TestExecution{RewardFile: task.EnvVerifierDir + "/reward.txt"},
	}
}

// art is a task-relative path as the root-relative path the task's files
// carry it under.
func (c *converter) art(name string) string {
	a, err := c.artifact(name)
	if err != nil {
		return name
	}
	return a
}

// shipTree ships every regular file under a task-relative folder (hidden
// entries and __pycache__ skipped).
func (c *converter) shipTree(dir string) error {
	files := map[string]string{}
	if err := c.collectFiles(dir, files); err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%s: empty or absent", c.file(dir))
	}
	for rel := range files {
		if err := c.ship(c.art(rel)); err != nil {
			return err
		}
	}
	return nil
}

// dockerfile records the build when the task ships one at df.
func (c *converter) dockerfile(env *task.Environment, df, context string) error {
	ok, err := c.exists(df)
	if err != nil || !ok {
		return err
	}
	env.Build = &task.EnvironmentBuild{Context: c.art(context), Dockerfile: c.art(df)}
	if env.Image != "" {
		c.rep.add(c.file(df), "", "not built: task.toml's docker_image %s is the environment (as Harbor runs it); `pack build` builds the Dockerfile only when asked to rebuild", env.Image)
	}
	return nil
}

func (c *converter) needImage(env *task.Environment) error {
	if env.Image == "" && env.Build == nil {
		return fmt.Errorf("%s: the task has no environment: neither [environment] docker_image in %s nor a Dockerfile (environment/Dockerfile, Dockerfile)", c.name, harborTaskFile)
	}
	if env.Image == "" {
		c.rep.add(c.file(env.Build.Dockerfile), "", "to build: `tolokaforge pack build` builds it, pushes it to your registry and pins the digest in the Task; a Task without an image is refused by the manager")
	}
	return nil
}

// readTOML parses task.toml into the YAML model the rest of the converter
// reads (TOML's values are JSON's), so its keys are taken, kept or refused
// by name like task.yaml's.
func (c *converter) readTOML() (*mapping, error) {
	data, err := c.read(harborTaskFile)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if _, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %w", c.file(harborTaskFile), err)
	}
	js, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.file(harborTaskFile), err)
	}
	doc, err := c.parse(harborTaskFile, js)
	if err != nil {
		return nil, err
	}
	return asMapping(c.file(harborTaskFile), "", doc)
}

// taskTOML maps task.toml's sections onto env (Harbor's keys; a
// Terminal-Bench 1 folder may carry one too).
func (c *converter) taskTOML(t *mapping, env *task.Environment, agentS, verifierS float64) error {
	if _, err := t.str("version"); err != nil {
		return err
	}
	if err := c.keepMetadata(t, "metadata"); err != nil {
		return err
	}
	e, err := t.sub("environment")
	if err != nil {
		return err
	}
	if env.Image, err = e.str("docker_image"); err != nil {
		return err
	}
	if v, err := e.number("build_timeout_sec"); err != nil {
		return err
	} else if v != nil {
		env.BuildTimeoutS = *v
	}
	if v, err := e.number("cpus"); err != nil {
		return err
	} else if v != nil {
		env.CPUs = *v
	}
	for _, f := range []struct {
		key, old string
		dst      *int64
	}{{"memory_mb", "memory", &env.MemoryMB}, {"storage_mb", "storage", &env.StorageMB}} {
		if v, err := e.integer(f.key); err != nil {
			return err
		} else if v != nil {
			*f.dst = int64(*v)
		}
		if s, err := e.str(f.old); err != nil {
			return err
		} else if s != "" {
			mb, err := sizeMB(s)
			if err != nil {
				return convError(e.file, e.at(f.old), "%v", err)
			}
			if *f.dst != 0 && *f.dst != mb {
				return convError(e.file, e.at(f.old), "%q (%d MB) contradicts %s = %d", s, mb, f.key, *f.dst)
			}
			*f.dst = mb
		}
	}
	if g, err := e.integer("gpus"); err != nil {
		return err
	} else if g != nil && *g != 0 {
		return convError(e.file, e.at("gpus"), "%d: refused: the environment pod requests no GPUs", *g)
	}
	if b, err := e.boolean("allow_internet"); err != nil {
		return err
	} else if b != nil {
		env.AllowInternet = *b
	} else {
		c.rep.add(e.file, e.at("allow_internet"), "absent: Harbor's default is true; here the environment's egress is denied unless the task says allow_internet = true")
	}
	if env.Workdir, err = e.str("workdir"); err != nil {
		return err
	}
	if env.Env, err = stringMap(e, "env"); err != nil {
		return err
	}
	if err := refuseLeftovers(e); err != nil {
		return err
	}
	a, err := t.sub("agent")
	if err != nil {
		return err
	}
	env.Agent.TimeoutS = agentS
	if v, err := a.number("timeout_sec"); err != nil {
		return err
	} else if v != nil {
		env.Agent.TimeoutS = *v
	}
	if env.Agent.User, err = userOf(a); err != nil {
		return err
	}
	if err := refuseLeftovers(a); err != nil {
		return err
	}
	v, err := t.sub("verifier")
	if err != nil {
		return err
	}
	c.td.Grading.TestExecution.TimeoutS = verifierS
	if n, err := v.number("timeout_sec"); err != nil {
		return err
	} else if n != nil {
		c.td.Grading.TestExecution.TimeoutS = *n
	}
	env.Verifier.TimeoutS = c.td.Grading.TestExecution.TimeoutS
	if env.Verifier.User, err = userOf(v); err != nil {
		return err
	}
	if env.Verifier.Env, err = stringMap(v, "env"); err != nil {
		return err
	}
	if err := refuseLeftovers(v); err != nil {
		return err
	}
	s, err := t.sub("solution")
	if err != nil {
		return err
	}
	if se, err := stringMap(s, "env"); err != nil {
		return err
	} else if len(se) > 0 {
		return convError(s.file, s.at("env"), "refused: the oracle's solution runs with the agent's environment ([environment] env)")
	}
	if err := refuseLeftovers(s); err != nil {
		return err
	}
	return refuseLeftovers(t)
}

// userOf reads a section's user (a name, or a uid TOML gives as a number).
func userOf(m *mapping) (string, error) {
	return m.str("user")
}

// keepMetadata keeps a mapping's key whole in the TaskDescription's metadata.
func (c *converter) keepMetadata(m *mapping, key string) error {
	raw, err := m.raw(key)
	if err != nil || raw == nil {
		return err
	}
	if c.td.Metadata == nil {
		c.td.Metadata = map[string]json.RawMessage{}
	}
	c.td.Metadata[key] = raw
	return nil
}

// stringMap reads a mapping of strings (an environment's variables).
func stringMap(m *mapping, key string) (map[string]string, error) {
	sub, err := m.sub(key)
	if err != nil || sub == nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range sub.keys {
		n := resolve(sub.vals[k])
		if n == nil || n.Kind != yaml.ScalarNode {
			return nil, convError(sub.file, sub.at(k), "expected a string, got %s", kindOf(n))
		}
		out[k] = n.Value
		sub.used[k] = true
	}
	return out, nil
}

// refuseLeftovers refuses the first key (sorted) no mapping took: a
// terminal task's keys decide how it runs, so an unknown one is not
// guessed at.
func refuseLeftovers(m *mapping) error {
	if m == nil {
		return nil
	}
	var r report
	m.leftovers(&r, "")
	if len(r.diags) == 0 {
		return nil
	}
	d := r.diags[0]
	return fmt.Errorf("%s: %s: not a key we know how to honour, refused (see api/task/pack/KEYS.md, Terminal tasks)", d.File, d.Path)
}

var sizeRe = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)i?B?\s*$`)

// sizeMB reads Harbor's older memory/storage strings ("2G", "512M",
// "1.5Gi") as megabytes.
func sizeMB(s string) (int64, error) {
	m := sizeRe.FindStringSubmatch(strings.ToUpper(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size (a number and K, M, G or T)", s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	mult := map[string]float64{"": 1.0 / (1 << 20), "K": 1.0 / 1024, "M": 1, "G": 1024, "T": 1 << 20}[m[2]]
	mb := math.Ceil(v * mult)
	if mb < 1 || mb > 1<<30 {
		return 0, fmt.Errorf("%q is outside 1 MB to 1 PB", s)
	}
	return int64(mb), nil
}
