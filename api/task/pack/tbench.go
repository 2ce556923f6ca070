package pack

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"tolokaforge.io/operator/api/task"
)

// A Terminal-Bench task folder (task.yaml with an instruction and no
// task_id, tests/, run-tests.sh, a Dockerfile and docker-compose.yaml) is
// mapped by an adapter, as upstream's terminal-bench adapter does: the folder
// name is the task id, the instruction is the task and the user's first
// message, and the verifier (run-tests.sh over tests/, writing a reward file)
// becomes grading_method test_execution, its files in the trial's initial
// files where the runner's verifier sandbox finds them.

// tbenchRunTests is the verifier script; tbenchReward the file it writes.
const (
	tbenchRunTests = "run-tests.sh"
	tbenchReward   = "/logs/verifier/reward.txt"
	// tbenchVerifierTimeoutS is the verifier's bound when task.toml does
	// not say (Terminal-Bench's default).
	tbenchVerifierTimeoutS = 180
)

// isTerminalBench says a task.yaml is a Terminal-Bench task's.
func isTerminalBench(t *mapping) bool {
	return !t.has("task_id") && t.has("instruction")
}

func (c *converter) terminalBench(t *mapping) error {
	td := &c.td
	instr, err := t.str("instruction")
	if err != nil {
		return err
	}
	if strings.TrimSpace(instr) == "" {
		return convError(t.file, "instruction", "required")
	}
	td.TaskID, td.Name = c.name, c.name
	td.Category = "terminal_bench"
	td.Description = instr
	td.AdapterType = task.AdapterNative
	td.SystemPrompt = "You are an expert developer. Use the tools to carry out the task described in the user message."
	c.out.InitialUserMessage = instr
	if c.out.Name = objectName(td.TaskID); c.out.Name == "" {
		return fmt.Errorf("%s: the folder name %q has no letters or digits to name a Task with", c.name, c.name)
	}
	for _, k := range t.keys {
		if k != "instruction" && !isEmpty(t.vals[k]) {
			// Older Terminal-Bench task.yaml files carry more (author, tags,
			// timeouts): metadata, kept.
			raw, err := t.raw(k)
			if err != nil {
				return err
			}
			if td.Metadata == nil {
				td.Metadata = map[string]json.RawMessage{}
			}
			td.Metadata[k] = raw
		}
	}
	files := map[string]string{}
	if ok, err := c.exists(tbenchRunTests); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%s: a Terminal-Bench task (task.yaml with instruction) needs %s", c.name, tbenchRunTests)
	}
	data, err := c.read(tbenchRunTests)
	if err != nil {
		return err
	}
	files[tbenchRunTests] = string(data)
	if err := c.collectFiles("tests", files); err != nil {
		return err
	}
	for _, f := range []string{"docker-compose.yaml", "environment/Dockerfile", "Dockerfile"} {
		if ok, err := c.exists(f); err != nil {
			return err
		} else if ok {
			c.rep.add(c.file(f), "", "not built: the task runs in the runner's own environment, not this container; the verifier needs what run-tests.sh calls (bash, pytest) on the runner's image")
		}
	}
	if ok, err := c.exists("task.toml"); err != nil {
		return err
	} else if ok {
		c.rep.add(c.file("task.toml"), "", "not read: its metadata and timeouts are not mapped; the verifier is bounded by %d s", tbenchVerifierTimeoutS)
	}
	c.rep.add(t.file, "", "Terminal-Bench's bash tool runs in the task's container, which the runner does not have: the agent gets the runner's file tools (read_file, write_file, list_dir) in the trial's directory")
	for _, name := range []string{"read_file", "write_file", "list_dir"} {
		s, ok := c.opts.Builtins.Lookup(name)
		if !ok {
			return fmt.Errorf("%s: the runner's builtin catalog has no %s", c.name, name)
		}
		s.TimeoutS = task.DefaultToolTimeoutS
		td.AgentTools = append(td.AgentTools, s)
	}
	td.UserTools = []task.ToolSchema{}
	td.InitialState = &task.InitialState{Tables: map[string]json.RawMessage{}, Schemas: []task.TableSchema{}, UnstableFields: []task.UnstableField{}, Filesystem: files}
	one := 1.0
	td.Grading = &task.GradingConfig{
		GradingMethod: task.GradingTestExecution,
		PassThreshold: &one,
		TestExecution: &task.TestExecution{Command: []string{"bash", tbenchRunTests}, RewardFile: tbenchReward, TimeoutS: tbenchVerifierTimeoutS},
	}
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
