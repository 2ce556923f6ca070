package controllers

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// DefaultPython is the runner's --python in the Python image: python3 on the
// image's PATH (/usr/bin/python3 in `make image-python`'s Debian image,
// /usr/local/bin/python3 on a python:3.x base).
const DefaultPython = "python3"

// pythonArgv0 matches an MCP server command that starts a Python interpreter.
var pythonArgv0 = regexp.MustCompile(`^python(3(\.[0-9]+)?)?$`)

// pythonNeed says what in the task needs a Python interpreter in the runner
// pod: a tau_sync or mcp_async tool (a Python class), an MCP server that is a
// .py script or is started with python, or a Python custom-check suite. ""
// when nothing does: the pod keeps the Go-only image, which starts faster
// and carries no interpreter an agent's tools could reach.
func pythonNeed(desc *task.TaskDescription) string {
	if desc == nil {
		return ""
	}
	for _, side := range []struct {
		key   string
		tools []task.ToolSchema
	}{{"agent_tools", desc.AgentTools}, {"user_tools", desc.UserTools}} {
		for i := range side.tools {
			if why := toolNeedsPython(side.tools[i].Source); why != "" {
				return fmt.Sprintf("task.%s[%d] (%s) %s", side.key, i, side.tools[i].Name, why)
			}
		}
	}
	if g := desc.Grading; g != nil && g.CustomChecks != nil && g.CustomChecks.File != "" {
		return fmt.Sprintf("grading.custom_checks.file %s is a Python check suite", g.CustomChecks.File)
	}
	return ""
}

func toolNeedsPython(src *task.ToolSource) string {
	if src == nil {
		return ""
	}
	switch style := string(src.InvocationStyle); style {
	case "", "tau_sync", "mcp_async":
		if style == "" {
			style = "tau_sync" // the decoder's default
		}
		if src.Toolset == "builtin" {
			return ""
		}
		return fmt.Sprintf("has source.invocation_style %s (a Python class)", style)
	case string(task.InvocationMCPServer):
		if raw, ok := src.Extra["url"]; ok && string(raw) != "null" {
			return "" // a server already running elsewhere
		}
		if raw, ok := src.Extra["command"]; ok {
			var argv []string
			if err := json.Unmarshal(raw, &argv); err == nil && len(argv) > 0 {
				if pythonArgv0.MatchString(path.Base(argv[0])) || strings.HasSuffix(argv[0], ".py") {
					return fmt.Sprintf("starts its MCP server with %s", argv[0])
				}
				return ""
			}
		}
		if s := src.MCPServerScript; s != nil && strings.HasSuffix(*s, ".py") {
			return fmt.Sprintf("has source.mcp_server_script %s (a Python MCP server)", *s)
		}
	}
	return ""
}

// runnerImage is the runner pod's image and, when its task needs Python,
// the --python it passes. A Trial's spec.runner.image wins: its author chose
// the image, Python or not. Without one, a task that needs Python gets the
// manager's Python image, and with none configured the Trial cannot run:
// the error says which setting to give.
func runnerImage(cfg PodConfig, t *evalv1.Trial, desc *task.TaskDescription) (image, python string, err error) {
	need := pythonNeed(desc)
	if need != "" {
		python = cfg.python()
	}
	switch {
	case t.Spec.Runner.Image != "":
		return t.Spec.Runner.Image, python, nil
	case need == "":
		return cfg.Image, "", nil
	case cfg.PythonImage == "":
		id := ""
		if desc != nil {
			id = desc.TaskID
		}
		return "", "", fmt.Errorf("task %s needs Python in the runner pod (%s), but the manager has no Python runner image: "+
			"start the manager with --runner-python-image (Helm value runnerPythonImage; `make image-python` builds it), "+
			"or set the Trial's spec.runner.image to an image with python3", id, need)
	default:
		return cfg.PythonImage, python, nil
	}
}

func (c PodConfig) python() string {
	if c.Python == "" {
		return DefaultPython
	}
	return c.Python
}
