package pyenv

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/task/pack"
)

func needDebian(t *testing.T) {
	t.Helper()
	if out, err := Missing(context.Background(), Debian, Provisioned); err != nil || len(out) > 0 {
		t.Fatalf("needs Debian's %s with %v (make python-deps): missing %v, %v", Debian, Provisioned, out, err)
	}
}

// fakePython puts first on PATH a python3 that is Debian's without its site
// packages (-S), as a pyenv shim or a bare virtualenv lacks what `make python-deps`
// installs; withSite keeps them (a PATH python3 that has the modules).
func fakePython(t *testing.T, withSite ...bool) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "python3")
	flag := " -S"
	if len(withSite) > 0 && withSite[0] {
		flag = ""
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexec "+Debian+flag+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return p
}

func TestChoose(t *testing.T) {
	needDebian(t)
	ctx := context.Background()
	for _, c := range []struct {
		name, explicit, env string
		fakePath, site      bool
		want                string
	}{
		{name: "--python wins", explicit: "/opt/py/bin/python3", env: "/usr/bin/python3", want: "/opt/py/bin/python3"},
		{name: "then $TOLOKAFORGE_PYTHON", env: "/opt/env/python3", want: "/opt/env/python3"},
		{name: "PATH's python3 has the modules", fakePath: true, site: true, want: "python3"},
		{name: "PATH's python3 lacks them: Debian's", fakePath: true, want: Debian},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.fakePath {
				fakePython(t, c.site)
			}
			if got := Choose(ctx, c.explicit, c.env, Provisioned); got != c.want {
				t.Fatalf("Choose = %q, want %q", got, c.want)
			}
		})
	}
}

func TestImportsAndCheck(t *testing.T) {
	needDebian(t)
	files := map[string][]byte{
		"registry.py":            []byte("import sys, json\nfrom pathlib import Path\nfrom retail_tools.think import Think\nTOOLS = {}\n"),
		"retail_tools/think.py":  []byte("from .tool import Tool\nimport pydantic  # noqa\nfrom email_validator import validate_email\n"),
		"tasks/t/checks.py":      []byte("from tolokaforge.core.grading.checks_interface import check\n"),
		"retail_tools/tool.py":   []byte("import json\n    import no_such_module_xyz as n, os.path\n"),
		"retail_tools/notes.txt": []byte("import not_python\n"),
	}
	want := []string{"email_validator", "json", "no_such_module_xyz", "os", "pathlib", "pydantic", "sys"}
	if got := Imports(files); !reflect.DeepEqual(got, want) {
		t.Fatalf("Imports = %v, want %v", got, want)
	}
	ctx := context.Background()
	err := Check(ctx, Debian, files)
	wantErr := "the pack's Python tools import no_such_module_xyz, which /usr/bin/python3 cannot import: run `make python-deps` " +
		"(Debian's /usr/bin/python3 with the modules the packs import) or name an interpreter that has them with --python"
	if err == nil || err.Error() != wantErr {
		t.Fatalf("Check = %v\nwant %s", err, wantErr)
	}
	delete(files, "retail_tools/tool.py")
	if err := Check(ctx, Debian, files); err != nil {
		t.Fatalf("Debian's python3 has them: %v", err)
	}
	bare := fakePython(t)
	if err := Check(ctx, bare, files); err == nil || !strings.HasPrefix(err.Error(), "the pack's Python tools import email_validator, pydantic, which "+bare+" cannot import: run `make python-deps`") {
		t.Fatalf("a python3 without site packages: %v", err)
	}
	if err := Check(ctx, "/nonexistent/python3", files); err == nil || !strings.Contains(err.Error(), "check the pack's Python imports: run /nonexistent/python3: ") {
		t.Fatalf("a missing interpreter: %v", err)
	}
}

func TestRewriteHint(t *testing.T) {
	const remedyText = "run `make python-deps` (Debian's /usr/bin/python3 with the modules the packs import) or name an interpreter that has them with --python"
	for _, c := range []struct{ in, want string }{
		{"ImportError: email-validator is not installed, run `pip install 'pydantic[email]'`", "ImportError: email-validator is not installed: " + remedyText},
		{"ImportError: email-validator is not installed, run pip install 'pydantic[email]'", "ImportError: email-validator is not installed: " + remedyText},
		{"ModuleNotFoundError: No module named 'yaml'; try pip3 install pyyaml", "ModuleNotFoundError: No module named 'yaml': " + remedyText},
		{"ValueError: bad order", "ValueError: bad order"},
	} {
		got := RewriteHint(c.in)
		if got != c.want {
			t.Errorf("RewriteHint(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
		if strings.Contains(strings.ToLower(got), "pip") {
			t.Errorf("a pip instruction survived: %q", got)
		}
	}
}

const registry = `
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from tools_pkg.tools import Described, Silent
TOOLS = {"described": Described, "silent": Silent}
`

const toolsPy = `
class Described:
    @staticmethod
    def invoke(data, user_id):
        return user_id
    @staticmethod
    def get_info():
        return {"type": "function", "function": {"name": "described", "description": "Say who.",
                "parameters": {"type": "object", "properties": {"user_id": {"type": "string"}}, "required": ["user_id"]}}}

class Silent:
    @staticmethod
    def invoke(data):
        return ""
`

func TestDescriber(t *testing.T) {
	needDebian(t)
	files := map[string][]byte{"proj/registry.py": []byte(registry), "proj/tools_pkg/__init__.py": nil, "proj/tools_pkg/tools.py": []byte(toolsPy)}
	got, err := Describer(Debian, 0)(context.Background(), pack.DescribeRequest{Files: files, Script: "proj/registry.py", Tools: []string{"described", "silent"}})
	if err != nil {
		t.Fatal(err)
	}
	d := got["described"]
	if d.Description != "Say who." || strings.Join(strings.Fields(string(d.Parameters)), "") != `{"type":"object","properties":{"user_id":{"type":"string"}},"required":["user_id"]}` {
		t.Fatalf("described: %+v", d)
	}
	if s := got["silent"]; len(s.Parameters) != 0 && string(s.Parameters) != "null" {
		t.Fatalf("silent gave a schema: %+v", s)
	}

	for _, c := range []struct {
		name, tools, want string
		timeout           time.Duration
	}{
		{name: "an ImportError's pip advice is rewritten", tools: "raise ImportError(\"email-validator is not installed, run pip install 'pydantic[email]'\")\n",
			want: "load tool described with /usr/bin/python3: script "},
		{name: "a script that never finishes importing is bounded", tools: "while True:\n    pass\n", timeout: 2 * time.Second,
			want: "the tools did not load within 2s: context deadline exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := map[string][]byte{"proj/registry.py": []byte(registry), "proj/tools_pkg/__init__.py": nil, "proj/tools_pkg/tools.py": []byte(c.tools)}
			start := time.Now()
			_, err := Describer(Debian, c.timeout)(context.Background(), pack.DescribeRequest{Files: bad, Script: "proj/registry.py", Tools: []string{"described"}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "pip install") {
				t.Fatalf("a pip instruction reached the user: %v", err)
			}
			if c.timeout > 0 && time.Since(start) > c.timeout+10*time.Second {
				t.Fatalf("took %s", time.Since(start))
			}
		})
	}
	if _, err := Describer(Debian, 0)(context.Background(), pack.DescribeRequest{Files: map[string][]byte{"../x.py": nil}, Script: "../x.py"}); err == nil ||
		err.Error() != `describe tools: file "../x.py" leaves the task's files` {
		t.Fatalf("a path out of the files: %v", err)
	}
}

// FuzzImports: whatever a .py file holds, Imports does not panic and answers
// valid, sorted, distinct module names.
func FuzzImports(f *testing.F) {
	for _, s := range []string{"import os, sys\n", "from a.b import c\n", "  import x as y, z.w\n", "from . import q\n", "import (\n", "import 9bad\n", "from\timport\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		got := Imports(map[string][]byte{"m.py": src})
		for i, n := range got {
			if !validName(n) || (i > 0 && got[i-1] >= n) {
				t.Fatalf("Imports(%q) = %q", src, got)
			}
		}
	})
}

// FuzzRewriteHint: no pip instruction survives a rewrite.
func FuzzRewriteHint(f *testing.F) {
	for _, s := range []string{"run pip install x", "try `pip3 install y`", "ValueError: z", "pip install"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		if got := RewriteHint(msg); pipHint.MatchString(got) {
			t.Fatalf("RewriteHint(%q) = %q", msg, got)
		}
	})
}

// stdioServer is a standard-library stdio MCP server: initialize, tools/list.
const stdioServer = `
import json, sys
TOOLS = [{"name": "lookup", "description": "Look a thing up.",
          "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m = msg.get("method")
    if m == "initialize":
        res = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
               "serverInfo": {"name": "standin", "version": "1"}}
    elif m == "tools/list":
        res = {"tools": TOOLS}
    else:
        res = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": res}) + "\n")
    sys.stdout.flush()
`

// TestDescriberStdioServer: a stdio MCP server script is asked tools/list once;
// one that never answers is bounded.
func TestDescriberStdioServer(t *testing.T) {
	needDebian(t)
	got, err := Describer(Debian, 0)(context.Background(), pack.DescribeRequest{
		Files: map[string][]byte{"server.py": []byte(stdioServer)}, Script: "server.py", Tools: []string{"lookup"}, Stdio: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := got["lookup"]; d.Description != "Look a thing up." || string(d.Parameters) != `{"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"}` {
		t.Fatalf("lookup: %+v (%s)", d, d.Parameters)
	}
	start := time.Now()
	_, err = Describer(Debian, 2*time.Second)(context.Background(), pack.DescribeRequest{
		Files: map[string][]byte{"server.py": []byte("import time\ntime.sleep(60)\n")}, Script: "server.py", Tools: []string{"lookup"}, Stdio: true})
	if err == nil || time.Since(start) > 12*time.Second {
		t.Fatalf("a silent server: err %v after %s", err, time.Since(start))
	}
}
