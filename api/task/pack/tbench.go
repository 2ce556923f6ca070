package pack

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"tolokaforge.io/operator/api/task"
)

// A Terminal-Bench 1 task folder (task.yaml with an instruction and no
// task_id, run-tests.sh, tests/, solution.sh, a Dockerfile and
// docker-compose.yaml) runs like a Harbor task (harbor.go): in its own
// container, run-tests.sh and tests/ uploaded to /tests after the agent
// stopped, graded by the reward file when it writes one and otherwise, as
// Terminal-Bench's harness does, by pytest's -rA summary (every test passed).

const tbenchRunTests = "run-tests.sh"

// isTerminalBench says a task.yaml is a Terminal-Bench task's.
func isTerminalBench(t *mapping) bool {
	return !t.has("task_id") && t.has("instruction")
}

// tbenchMetadata are task.yaml keys kept as metadata (they describe the
// task; none changes how it runs).
var tbenchMetadata = []string{"author_name", "author_email", "difficulty", "category", "tags", "descriptions",
	"estimated_duration_sec", "expert_time_estimate_min", "junior_time_estimate_min"}

func (c *converter) terminalBench(t *mapping) error {
	instr, err := t.str("instruction")
	if err != nil {
		return err
	}
	if strings.TrimSpace(instr) == "" {
		return convError(t.file, "instruction", "required")
	}
	env := &task.Environment{Verifier: task.EnvironmentVerifier{Parser: task.ParserPytest, Env: map[string]string{"TEST_DIR": task.EnvTestsDir}}}
	c.envTask(instr, env)
	if c.out.Name == "" {
		return fmt.Errorf("%s: the folder name %q has no letters or digits to name a Task with", c.name, c.name)
	}
	agentS, testS := float64(tb1AgentTimeoutS), float64(tb1TestTimeoutS)
	if v, err := t.number("max_agent_timeout_sec"); err != nil {
		return err
	} else if v != nil {
		agentS = *v
	}
	if v, err := t.number("max_test_timeout_sec"); err != nil {
		return err
	} else if v != nil {
		testS = *v
	}
	if p, err := t.str("parser_name"); err != nil {
		return err
	} else if p != "" && p != task.ParserPytest {
		return convError(t.file, "parser_name", "%q: refused: only Terminal-Bench's pytest parser is implemented", p)
	}
	if b, err := t.boolean("run_tests_in_same_shell"); err != nil {
		return err
	} else if b != nil && *b {
		return convError(t.file, "run_tests_in_same_shell", "true: refused: the tests run in a fresh shell after the agent stopped, never in the agent's")
	}
	if b, err := t.boolean("disable_asciinema"); err != nil {
		return err
	} else if b != nil {
		c.rep.add(t.file, "disable_asciinema", "not read: no terminal recording is made (every command and its output is in the trajectory)")
	}
	for _, k := range tbenchMetadata {
		if err := c.keepMetadata(t, k); err != nil {
			return err
		}
	}
	if err := refuseLeftovers(t); err != nil {
		return err
	}
	if ok, err := c.exists(harborTaskFile); err != nil {
		return err
	} else if ok {
		tm, err := c.readTOML()
		if err != nil {
			return err
		}
		if err := c.taskTOML(tm, env, agentS, testS); err != nil {
			return err
		}
	} else {
		env.Agent.TimeoutS, env.Verifier.TimeoutS = agentS, testS
		c.td.Grading.TestExecution.TimeoutS = testS
	}
	if env.Verifier.Env == nil {
		env.Verifier.Env = map[string]string{}
	}
	env.Verifier.Env["TEST_DIR"] = task.EnvTestsDir
	if ok, err := c.exists(tbenchRunTests); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%s: a Terminal-Bench task (task.yaml with instruction) needs %s", c.name, tbenchRunTests)
	}
	if err := c.ship(c.art(tbenchRunTests)); err != nil {
		return err
	}
	env.Verifier.Tests = []string{c.art(tbenchRunTests)}
	if ok, err := c.exists("tests"); err != nil {
		return err
	} else if ok {
		if err := c.shipTree("tests"); err != nil {
			return err
		}
		env.Verifier.Tests = append([]string{c.art("tests")}, env.Verifier.Tests...)
	}
	c.td.Grading.TestExecution.Command = []string{"bash", task.EnvTestsDir + "/" + tbenchRunTests}
	if ok, err := c.exists(tbenchSolution); err != nil {
		return err
	} else if ok {
		if err := c.ship(c.art(tbenchSolution)); err != nil {
			return err
		}
		env.Solution = &task.EnvironmentSolution{Files: []string{c.art(tbenchSolution)}, Command: []string{"bash", task.EnvSolutionDir + "/" + tbenchSolution}}
	} else if ok, err := c.exists("solution.yaml"); err != nil {
		return err
	} else if ok {
		c.rep.add(c.file("solution.yaml"), "", "not read: keystrokes for a terminal multiplexer; the oracle runs solution.sh only, so this task has no oracle")
	} else {
		c.rep.add(c.file(tbenchSolution), "", "absent: the task has no oracle solution")
	}
	for _, df := range []struct{ file, context string }{{"environment/Dockerfile", "environment"}, {"Dockerfile", "."}} {
		if env.Build != nil {
			break
		}
		if err := c.dockerfile(env, df.file, df.context); err != nil {
			return err
		}
	}
	if err := c.compose(); err != nil {
		return err
	}
	return c.needImage(env)
}

// compose accepts Terminal-Bench's docker-compose.yaml when it describes
// the one container the harness runs (its settings are the harness's
// plumbing: image and container names, log mounts); a second service is
// refused by name.
func (c *converter) compose() error {
	const file = "docker-compose.yaml"
	ok, err := c.exists(file)
	if err != nil || !ok {
		return err
	}
	data, err := c.read(file)
	if err != nil {
		return err
	}
	doc, err := c.parse(file, data)
	if err != nil {
		return err
	}
	m, err := asMapping(c.file(file), "", doc)
	if err != nil {
		return err
	}
	svcs, err := m.sub("services")
	if err != nil {
		return err
	}
	if len(svcs.keys) > 1 {
		return convError(svcs.file, "services", "%s: refused: more than one service (a multi-container environment is not supported; the task's environment is one image)", strings.Join(svcs.keys, ", "))
	}
	c.rep.add(c.file(file), "", "one service: its image, names, command and mounts are Terminal-Bench's harness plumbing, not mapped (the environment runs the task's image with our exec agent as its entrypoint)")
	return nil
}

// collectFiles adds every regular file under dir (relative to the task
// directory) to files, keyed by its path; a missing dir adds nothing.
func (c *converter) collectFiles(dir string, files map[string]string) error {
	p, err := c.local(dir)
	if err != nil {
		return err
	}
	ents, err := c.root.ReadDir(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	for _, e := range ents {
		rel := path.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), ".") || e.Name() == "__pycache__" {
			continue
		}
		if e.IsDir() {
			if err := c.collectFiles(rel, files); err != nil {
				return err
			}
			continue
		}
		data, err := c.read(rel)
		if err != nil {
			return err
		}
		files[rel] = string(data)
	}
	return nil
}
