package controllers

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func toolWith(name string, src *task.ToolSource) task.ToolSchema {
	return task.ToolSchema{Name: name, Source: src}
}

func TestPythonNeed(t *testing.T) {
	mcp := func(script string, extra map[string]string) *task.ToolSource {
		s := &task.ToolSource{Toolset: "shop", InvocationStyle: task.InvocationMCPServer, Extra: map[string]json.RawMessage{}}
		if script != "" {
			s.MCPServerScript = ptr.To(script)
		}
		for k, v := range extra {
			s.Extra[k] = json.RawMessage(v)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		desc *task.TaskDescription
		want string
	}{
		{"no task", nil, ""},
		{"builtin tools only", &task.TaskDescription{AgentTools: []task.ToolSchema{toolWith("write_file", nil),
			toolWith("calc", &task.ToolSource{Toolset: "builtin", InvocationStyle: "tau_sync"})}}, ""},
		{"tau_sync class", &task.TaskDescription{AgentTools: []task.ToolSchema{toolWith("write_file", nil),
			toolWith("get_order_details", &task.ToolSource{Toolset: "food", ClassName: "GetOrderDetails", InvocationStyle: "tau_sync"})}},
			"task.agent_tools[1] (get_order_details) has source.invocation_style tau_sync (a Python class)"},
		{"style left to its default", &task.TaskDescription{AgentTools: []task.ToolSchema{
			toolWith("t", &task.ToolSource{Toolset: "food", ClassName: "T"})}},
			"task.agent_tools[0] (t) has source.invocation_style tau_sync (a Python class)"},
		{"mcp_async user tool", &task.TaskDescription{UserTools: []task.ToolSchema{
			toolWith("ask", &task.ToolSource{Toolset: "food", InvocationStyle: "mcp_async"})}},
			"task.user_tools[0] (ask) has source.invocation_style mcp_async (a Python class)"},
		{".py MCP server script", &task.TaskDescription{AgentTools: []task.ToolSchema{toolWith("place_order", mcp("mcp_server.py", nil))}},
			"task.agent_tools[0] (place_order) has source.mcp_server_script mcp_server.py (a Python MCP server)"},
		{"MCP server binary", &task.TaskDescription{AgentTools: []task.ToolSchema{toolWith("place_order", mcp("server", nil))}}, ""},
		{"MCP server started with python3", &task.TaskDescription{AgentTools: []task.ToolSchema{
			toolWith("place_order", mcp("", map[string]string{"command": `["/usr/bin/python3.11", "-m", "shop"]`}))}},
			"task.agent_tools[0] (place_order) starts its MCP server with /usr/bin/python3.11"},
		{"command wins over the script", &task.TaskDescription{AgentTools: []task.ToolSchema{
			toolWith("place_order", mcp("mcp_server.py", map[string]string{"command": `["tolokaforge", "mcp", "shop"]`}))}}, ""},
		{"MCP server by URL", &task.TaskDescription{AgentTools: []task.ToolSchema{
			toolWith("place_order", mcp("mcp_server.py", map[string]string{"url": `"http://shop:8080/mcp"`}))}}, ""},
		{"docker compose exec is not Python", &task.TaskDescription{AgentTools: []task.ToolSchema{
			toolWith("sh", &task.ToolSource{Toolset: "tb", InvocationStyle: "docker_compose_exec"})}}, ""},
		{"python check suite", &task.TaskDescription{Grading: &task.GradingConfig{CustomChecks: &task.CustomChecks{Enabled: true, File: "checks.py"}}},
			"grading.custom_checks.file checks.py is a Python check suite"},
		{"CEL checks only", &task.TaskDescription{Grading: &task.GradingConfig{CustomChecks: &task.CustomChecks{Enabled: true,
			Checks: []task.CustomCheck{{Name: "c", Expr: "true"}}}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pythonNeed(tc.desc); got != tc.want {
				t.Errorf("pythonNeed = %q, want %q", got, tc.want)
			}
		})
	}
}

func pythonTask() *task.TaskDescription {
	return &task.TaskDescription{TaskID: "food_delivery_2_task_1", AgentTools: []task.ToolSchema{
		toolWith("get_order_details", &task.ToolSource{Toolset: "food", ClassName: "GetOrderDetails", InvocationStyle: "tau_sync"})}}
}

// TestRunnerPodImage: the Python image (and --python) only for a task that
// needs Python; a Trial's own spec.runner.image always wins; the DB service
// keeps the manager's image.
func TestRunnerPodImage(t *testing.T) {
	goOnly := &task.TaskDescription{TaskID: "shop", AgentTools: []task.ToolSchema{toolWith("write_file", nil)}}
	both := PodConfig{Image: "tolokaforge:v1", PythonImage: "tolokaforge:v1-python"}
	for _, tc := range []struct {
		name       string
		cfg        PodConfig
		override   string
		desc       *task.TaskDescription
		wantImage  string
		wantPython string // "" : no --python flag
	}{
		{"Go-only task", both, "", goOnly, "tolokaforge:v1", ""},
		{"Python task", both, "", pythonTask(), "tolokaforge:v1-python", "--python=python3"},
		{"interpreter named", PodConfig{Image: "i", PythonImage: "p", Python: "/usr/local/bin/python3"}, "", pythonTask(), "p", "--python=/usr/local/bin/python3"},
		{"trial override, Python task", both, "team/runner:py", pythonTask(), "team/runner:py", "--python=python3"},
		{"trial override, Go-only task", both, "team/runner:go", goOnly, "team/runner:go", ""},
		{"no Python image, Go-only task", PodConfig{Image: "tolokaforge:v1"}, "", goOnly, "tolokaforge:v1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := testTrial()
			tr.Spec.Runner.Image = tc.override
			pod := runnerPod(tc.cfg, attemptRef{tr, 1}, tc.desc)
			c := pod.Spec.Containers[0]
			if c.Image != tc.wantImage {
				t.Errorf("runner image %q, want %q", c.Image, tc.wantImage)
			}
			var py []string
			for _, a := range c.Args {
				if strings.HasPrefix(a, "--python") {
					py = append(py, a)
				}
			}
			if want := []string{tc.wantPython}; tc.wantPython == "" && len(py) != 0 || tc.wantPython != "" && !slices.Equal(py, want) {
				t.Errorf("runner --python args %q, want %q", py, tc.wantPython)
			}
			if tr.Spec.Runner.Image != tc.override {
				t.Errorf("runnerPod changed the Trial's spec.runner.image to %q", tr.Spec.Runner.Image)
			}
			if db := dbServicePod(tc.cfg, attemptRef{tr, 1}); db.Spec.Containers[0].Image != tc.cfg.Image {
				t.Errorf("dbservice image %q, want the manager's %q", db.Spec.Containers[0].Image, tc.cfg.Image)
			}
			// The Python image runs as the same user, under the same policy.
			if sc := pod.Spec.SecurityContext; ptr.Deref(sc.RunAsUser, 0) != nonRootUID || !ptr.Deref(c.SecurityContext.ReadOnlyRootFilesystem, false) {
				t.Errorf("runner pod security %+v / %+v", sc, c.SecurityContext)
			}
		})
	}
}

const wantNoPythonImage = "task food_delivery_2_task_1 needs Python in the runner pod (task.agent_tools[0] (get_order_details) has source.invocation_style tau_sync (a Python class)), " +
	"but the manager has no Python runner image: start the manager with --runner-python-image (Helm value runnerPythonImage; `make image-python` builds it), " +
	"or set the Trial's spec.runner.image to an image with python3"

func TestRunnerImageRefusesPythonWithoutImage(t *testing.T) {
	_, _, err := runnerImage(PodConfig{Image: "tolokaforge:v1"}, testTrial(), pythonTask())
	if err == nil || err.Error() != wantNoPythonImage {
		t.Fatalf("err %v\nwant %s", err, wantNoPythonImage)
	}
	tr := testTrial()
	tr.Spec.Runner.Image = "team/runner:py"
	if img, py, err := runnerImage(PodConfig{Image: "tolokaforge:v1"}, tr, pythonTask()); err != nil || img != "team/runner:py" || py != "python3" {
		t.Errorf("with spec.runner.image: %q %q %v, want the override, python3 and no error", img, py, err)
	}
}

// TestPlanRefusesPythonTaskWithoutImage: the Trial ends Invalid before any
// attempt or pod, naming the flag.
func TestPlanRefusesPythonTaskWithoutImage(t *testing.T) {
	tr := testTrial()
	_, _, imgErr := runnerImage(PodConfig{Image: "tolokaforge:v1"}, tr, pythonTask())
	p := planTrial(&world{Now: t0, Trial: tr, Task: &resolvedTask{Desc: pythonTask()}, ImageErr: imgErr})
	st := p.Status
	if st.Phase != evalv1.PhaseInvalid {
		t.Errorf("phase %s, want Invalid", st.Phase)
	}
	if c := cond(&st, evalv1.TrialFailed); c.Status != metav1.ConditionTrue || c.Reason != evalv1.ReasonInvalidConfig || c.Message != wantNoPythonImage {
		t.Errorf("Failed = %+v", c)
	}
	if p.Claim != nil || len(p.CreatePod) != 0 || len(st.Attempts) != 0 {
		t.Errorf("an attempt started: claim %v pods %v attempts %d", p.Claim != nil, p.CreatePod, len(st.Attempts))
	}
}
