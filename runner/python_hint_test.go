package runner_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
)

// TestPythonImportErrorNamesOurRemedy: an ImportError's "run pip install" advice,
// raised while a tool loads (RegisterTrial, before any model is called) or while it
// runs (ExecuteTool), reaches the user as this project's remedy: make python-deps
// or --python, never a package index.
func TestPythonImportErrorNamesOurRemedy(t *testing.T) {
	needPython(t)
	h := startRunner(t, nil, withPython())
	const remedy = "run `make python-deps` (Debian's /usr/bin/python3 with the modules the packs import) or name an interpreter that has them with --python"
	raise := "raise ImportError(\"email-validator is not installed, run `pip install 'pydantic[email]'`\")\n"
	src := obj{"toolset": "t", "module_path": "tools.a", "class_name": "A", "invocation_style": "tau_sync"}

	atLoad := baseTask([]any{obj{"name": "a_tool", "description": "x", "source": src}}, nil, obj{"orders": []any{}})
	atLoad["tool_artifacts"] = obj{"tools/a.py": base64.StdEncoding.EncodeToString([]byte(raise))}
	resp := h.register(t, "hint-load", atLoad)
	want := "task.agent_tools[0] (a_tool): load the Python tool: module tools.a: ImportError: email-validator is not installed: " + remedy
	if resp.GetSuccess() || resp.GetError() != want {
		t.Fatalf("register: success=%v\n error %q\n want  %q", resp.GetSuccess(), resp.GetError(), want)
	}

	atCall := baseTask([]any{obj{"name": "a_tool", "description": "x", "source": src}}, nil, obj{"orders": []any{}})
	atCall["tool_artifacts"] = obj{"tools/a.py": base64.StdEncoding.EncodeToString([]byte(
		"class A:\n    @staticmethod\n    def invoke(data):\n        " + raise))}
	h.mustRegister(t, "hint-call", atCall)
	r := h.exec(t, "hint-call", call{tool: "a_tool", args: `{}`, callID: "c1"})
	if r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_ERROR || r.GetErrorMessage() != "ImportError: email-validator is not installed: "+remedy {
		t.Fatalf("call: %s %q", r.GetStatus(), r.GetErrorMessage())
	}
	if strings.Contains(resp.GetError()+r.GetErrorMessage(), "pip") {
		t.Fatal("a pip instruction reached the user")
	}
}
