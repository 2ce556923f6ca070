package pack

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools/builtin"
)

const harborTOML = `version = "1.0"

[metadata]
author_name = "a"
difficulty = "easy"
tags = ["shell"]

[environment]
build_timeout_sec = 120.0
cpus = 2
memory_mb = 1024
storage_mb = 2048
allow_internet = false
workdir = "/app"
env = { LANG = "C.UTF-8" }

[agent]
timeout_sec = 300.0
user = "agent"

[verifier]
timeout_sec = 90.0
user = "root"
env = { PYTHONDONTWRITEBYTECODE = "1" }
`

func harborFiles(toml string) map[string]string {
	return map[string]string{
		"instruction.md":         "Write hello to /app/out.txt.\n",
		"task.toml":              toml,
		"environment/Dockerfile": "FROM debian:bookworm-slim\nWORKDIR /app\n",
		"environment/data.txt":   "context file\n",
		"tests/test.sh":          "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
		"tests/test_out.py":      "def test_x(): pass\n",
		"solution/solve.sh":      "echo hello > /app/out.txt\n",
	}
}

func artifactNames(d *task.TaskDescription) []string {
	var names []string
	for k := range d.ToolArtifacts {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// A Harbor task imports with every task.toml key in its place; the tests and
// the solution travel in the task's files, the build context does not.
func TestConvertHarborTask(t *testing.T) {
	dir := writePack(t, "hello-world", harborFiles(harborTOML))
	c, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	d := c.Description
	if d.TaskID != "hello-world" || d.AdapterType != task.AdapterTerminalBench || c.Name != "hello-world" {
		t.Fatalf("task %q adapter %q name %q", d.TaskID, d.AdapterType, c.Name)
	}
	if c.InitialUserMessage != "Write hello to /app/out.txt.\n" || d.Description != c.InitialUserMessage {
		t.Fatalf("instruction %q", c.InitialUserMessage)
	}
	want := &task.Environment{
		Build:         &task.EnvironmentBuild{Context: "environment", Dockerfile: "environment/Dockerfile"},
		BuildTimeoutS: 120, CPUs: 2, MemoryMB: 1024, StorageMB: 2048, Workdir: "/app",
		Env:      map[string]string{"LANG": "C.UTF-8"},
		Agent:    task.EnvironmentActor{User: "agent", TimeoutS: 300},
		Verifier: task.EnvironmentVerifier{EnvironmentActor: task.EnvironmentActor{User: "root", TimeoutS: 90}, Env: map[string]string{"PYTHONDONTWRITEBYTECODE": "1"}, Tests: []string{"tests"}},
		Solution: &task.EnvironmentSolution{Files: []string{"solution"}, Command: []string{"bash", "/solution/solve.sh"}},
	}
	if !reflect.DeepEqual(d.Environment, want) {
		g, _ := json.Marshal(d.Environment)
		w, _ := json.Marshal(want)
		t.Fatalf("environment\n got %s\nwant %s", g, w)
	}
	te := d.Grading.TestExecution
	if d.Grading.GradingMethod != task.GradingTestExecution || !reflect.DeepEqual(te.Command, []string{"bash", "/tests/test.sh"}) ||
		te.RewardFile != "/logs/verifier/reward.txt" || te.TimeoutS != 90 || *d.Grading.PassThreshold != 1 {
		t.Fatalf("grading %+v %+v", d.Grading, te)
	}
	if got := artifactNames(d); !reflect.DeepEqual(got, []string{"solution/solve.sh", "tests/test.sh", "tests/test_out.py"}) {
		t.Fatalf("artifacts %v", got)
	}
	if b, _ := base64.StdEncoding.DecodeString(d.ToolArtifacts["tests/test.sh"]); !strings.Contains(string(b), "reward.txt") {
		t.Fatalf("test.sh %q", b)
	}
	var tools []string
	for _, ts := range d.AgentTools {
		tools = append(tools, ts.Name)
		if ts.Source != nil {
			t.Fatalf("tool %s has a source", ts.Name)
		}
	}
	if !reflect.DeepEqual(tools, task.EnvironmentToolNames) || d.AgentTools[0].TimeoutS != bashToolTimeoutS {
		t.Fatalf("tools %v (bash timeout %v)", tools, d.AgentTools[0].TimeoutS)
	}
	if string(d.Metadata["metadata"]) != `{"author_name":"a","difficulty":"easy","tags":["shell"]}` {
		t.Fatalf("metadata %s", d.Metadata["metadata"])
	}
	if len(c.Diagnostics) != 1 || !strings.Contains(c.Diagnostics[0].Msg, "pack build") {
		t.Fatalf("diagnostics %+v", c.Diagnostics)
	}
	// The wire form decodes back to the same environment (the runner's view).
	back, err := task.DecodeTaskDescription(c.Wire)
	if err != nil || !reflect.DeepEqual(back.Environment, want) {
		t.Fatalf("decode %v: %+v", err, back)
	}
}

// Harbor's defaults where task.toml is silent; the older size strings; a
// docker_image wins over the Dockerfile, which is reported.
func TestConvertHarborDefaultsAndSizes(t *testing.T) {
	files := harborFiles("[environment]\nmemory = \"2G\"\nstorage = \"512M\"\ndocker_image = \"registry.local/t@sha256:" + strings.Repeat("a", 64) + "\"\n")
	delete(files, "solution/solve.sh")
	c, err := Convert(writePack(t, "sized", files), Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	e := c.Description.Environment
	if e.MemoryMB != 2048 || e.StorageMB != 512 || e.CPUs != 1 || e.BuildTimeoutS != 600 || e.Agent.TimeoutS != 600 ||
		c.Description.Grading.TestExecution.TimeoutS != 600 || e.AllowInternet || e.Solution != nil || !strings.HasPrefix(e.Image, "registry.local/t@sha256:") {
		t.Fatalf("environment %+v", e)
	}
	var msgs []string
	for _, d := range c.Diagnostics {
		msgs = append(msgs, d.Path+": "+d.Msg)
	}
	joined := strings.Join(msgs, "\n")
	for _, w := range []string{"environment.allow_internet: absent: Harbor's default is true", "not built: task.toml's docker_image", "absent: the task has no oracle solution"} {
		if !strings.Contains(joined, w) {
			t.Fatalf("diagnostics lack %q:\n%s", w, joined)
		}
	}
}

// Every key that would change how a terminal task runs is either honoured
// or refused by name; nothing is guessed.
func TestConvertTerminalRefusals(t *testing.T) {
	h := func(toml string, edit func(map[string]string)) map[string]string {
		f := harborFiles(toml)
		if edit != nil {
			edit(f)
		}
		return f
	}
	tb := func(yaml string, edit func(map[string]string)) map[string]string {
		f := map[string]string{"task.yaml": yaml, "run-tests.sh": "pytest $TEST_DIR -rA\n", "tests/test_a.py": "def test_a(): pass\n", "Dockerfile": "FROM debian:bookworm-slim\n"}
		if edit != nil {
			edit(f)
		}
		return f
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"unknown environment key", h("[environment]\nprivileged = true\n", nil), "t/task.toml: environment.privileged: not a key we know how to honour, refused"},
		{"unknown section", h("[network]\nmode = \"host\"\n", nil), "t/task.toml: network: not a key we know how to honour, refused"},
		{"unknown agent key", h("[agent]\nmodel = \"x\"\n", nil), "t/task.toml: agent.model: not a key we know how to honour"},
		{"gpus", h("[environment]\ngpus = 1\n", nil), "t/task.toml: environment.gpus: 1: refused: the environment pod requests no GPUs"},
		{"contradicting memory", h("[environment]\nmemory_mb = 1024\nmemory = \"2G\"\n", nil), `t/task.toml: environment.memory: "2G" (2048 MB) contradicts memory_mb = 1024`},
		{"bad size", h("[environment]\nmemory = \"lots\"\n", nil), `t/task.toml: environment.memory: "lots" is not a size`},
		{"solution env", h("[solution]\nenv = { A = \"1\" }\n", nil), "t/task.toml: solution.env: refused: the oracle's solution runs with the agent's environment"},
		{"toml syntax", h("[environment\n", nil), "t/task.toml: toml:"},
		{"cpus as text", h("[environment]\ncpus = \"two\"\n", nil), `t/task.toml: environment.cpus: expected a number, got "two"`},
		{"compose environment", h("", func(f map[string]string) { f["environment/docker-compose.yaml"] = "services: {a: {}, b: {}}\n" }),
			"t/environment/docker-compose.yaml: refused: a docker-compose environment (several containers) is not supported"},
		{"no test.sh", h("", func(f map[string]string) { delete(f, "tests/test.sh") }), "t: a Harbor task needs tests/test.sh"},
		{"empty instruction", h("", func(f map[string]string) { f["instruction.md"] = " \n" }), "t/instruction.md: empty: the instruction is the task"},
		{"no image, no Dockerfile", h("", func(f map[string]string) { delete(f, "environment/Dockerfile"); delete(f, "environment/data.txt") }),
			"t: the task has no environment: neither [environment] docker_image in task.toml nor a Dockerfile"},
		{"bad user", h("[agent]\nuser = \"root; rm\"\n", nil), `environment.agent.user: "root; rm" is not a user name or uid`},
		{"bad workdir", h("[environment]\nworkdir = \"app\"\n", nil), `environment.workdir: "app" is not a clean absolute path`},
		{"bad env name", h("[environment]\nenv = { \"A-B\" = \"1\" }\n", nil), `environment.env.A-B: "A-B" is not an environment variable name`},
		{"zero cpus", h("[environment]\ncpus = 0.0001\n", nil), ""},
		{"tb1 unknown key", tb("instruction: x\nnetwork_mode: host\n", nil), "t/task.yaml: network_mode: not a key we know how to honour, refused"},
		{"tb1 parser", tb("instruction: x\nparser_name: swebench\n", nil), `t/task.yaml: parser_name: "swebench": refused: only Terminal-Bench's pytest parser is implemented`},
		{"tb1 same shell", tb("instruction: x\nrun_tests_in_same_shell: true\n", nil), "t/task.yaml: run_tests_in_same_shell: true: refused: the tests run in a fresh shell"},
		{"tb1 two services", tb("instruction: x\n", func(f map[string]string) {
			f["docker-compose.yaml"] = "services:\n  client: {}\n  db: {image: postgres}\n"
		}),
			"t/docker-compose.yaml: services: client, db: refused: more than one service"},
		{"tb1 no run-tests.sh", tb("instruction: x\n", func(f map[string]string) { delete(f, "run-tests.sh") }), "t: a Terminal-Bench task (task.yaml with instruction) needs run-tests.sh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Convert(writePack(t, "t", tc.files), Options{Builtins: builtin.Catalog{}})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant %s", err, tc.want)
			}
		})
	}
}

// A Terminal-Bench 1 folder: run-tests.sh beside the tests in /tests,
// TEST_DIR set, the pytest parser, solution.sh the oracle, the root
// Dockerfile the build, task.yaml's timeouts and kept keys.
func TestConvertTerminalBench1(t *testing.T) {
	dir := writePack(t, "count-lines", map[string]string{
		"task.yaml":             "instruction: Count the lines.\nmax_agent_timeout_sec: 200\nmax_test_timeout_sec: 40\nauthor_email: a@b\ndifficulty: easy\ntags: [x]\nparser_name: pytest\nrun_tests_in_same_shell: false\n",
		"run-tests.sh":          "pytest $TEST_DIR/test_outputs.py -rA\n",
		"tests/test_outputs.py": "def test_a(): pass\n",
		"solution.sh":           "wc -l f > /app/n\n",
		"Dockerfile":            "FROM debian:bookworm-slim\n",
		"docker-compose.yaml":   "services:\n  client:\n    build: .\n",
	})
	c, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	d := c.Description
	e := d.Environment
	want := task.EnvironmentVerifier{EnvironmentActor: task.EnvironmentActor{TimeoutS: 40}, Env: map[string]string{"TEST_DIR": "/tests"}, Tests: []string{"tests", "run-tests.sh"}, Parser: "pytest"}
	if !reflect.DeepEqual(e.Verifier, want) || e.Agent.TimeoutS != 200 {
		t.Fatalf("verifier %+v agent %+v", e.Verifier, e.Agent)
	}
	if !reflect.DeepEqual(e.Build, &task.EnvironmentBuild{Context: ".", Dockerfile: "Dockerfile"}) ||
		!reflect.DeepEqual(e.Solution, &task.EnvironmentSolution{Files: []string{"solution.sh"}, Command: []string{"bash", "/solution/solution.sh"}}) {
		t.Fatalf("build %+v solution %+v", e.Build, e.Solution)
	}
	if te := d.Grading.TestExecution; !reflect.DeepEqual(te.Command, []string{"bash", "/tests/run-tests.sh"}) || te.TimeoutS != 40 {
		t.Fatalf("test execution %+v", te)
	}
	if got := artifactNames(d); !reflect.DeepEqual(got, []string{"run-tests.sh", "solution.sh", "tests/test_outputs.py"}) {
		t.Fatalf("artifacts %v", got)
	}
	for _, k := range []string{"author_email", "difficulty", "tags"} {
		if d.Metadata[k] == nil {
			t.Fatalf("metadata lacks %s: %v", k, d.Metadata)
		}
	}
}

// The upstream Terminal-Bench fixture (task.yaml and a task.toml beside it)
// takes its timeouts and resources from task.toml.
func TestConvertUpstreamEchoHello(t *testing.T) {
	c, err := Convert(fixture("terminal_bench/echo-hello"), Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	e := c.Description.Environment
	if e.Agent.TimeoutS != 60 || e.Verifier.TimeoutS != 30 || e.CPUs != 1 || e.MemoryMB != 512 || e.StorageMB != 1024 ||
		e.Build == nil || e.Build.Dockerfile != "environment/Dockerfile" || e.Solution != nil || e.Verifier.Env["TEST_DIR"] != "/tests" {
		t.Fatalf("environment %+v", e)
	}
}

// pack import finds Harbor folders (task.toml and instruction.md) as it
// finds task.yaml folders.
func TestFindTasksHarbor(t *testing.T) {
	root := writeProject(t, map[string]string{
		"a/instruction.md": "x", "a/task.toml": "",
		"b/task.yaml": "instruction: y\n",
		"c/task.toml": "", // no instruction.md: not a task
	})
	got, err := FindTasks(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p[len(root)+1:])
	}
	if !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Fatalf("found %v", names)
	}
}
