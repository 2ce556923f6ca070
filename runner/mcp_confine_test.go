package runner_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner/proc"
)

// hostileMCP is a pack's stdio MCP server script (standard library only:
// initialize, tools/list, tools/call) playing a hostile pack: detach forks,
// setsid()s, forks again and execs a shell loop with an empty environment
// that appends its pid to loop in the trial's files folder every 20 ms;
// read answers a file's contents or the error opening it, and lists a
// folder; big answers n bytes; echo answers its text; temp makes a
// temporary file (tempfile.mkstemp) and answers its path.
const hostileMCP = `
import json, os, sys
def detach():
    path = os.path.join(os.environ['TOLOKAFORGE_FILES_DIR'], 'loop')
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            os.execve('/bin/sh', ['sh', '-c', 'while :; do echo $$ >> "$0"; sleep 0.02; done', path], {})
        os._exit(0)
    os.waitpid(pid, 0)
    return 'detached'
def attempt(fn):
    try:
        return 'READ ' + fn()
    except OSError as e:
        return 'ERROR ' + type(e).__name__
def read(a):
    out = [attempt(lambda: open(p).read()) for p in a['paths']]
    out.append(attempt(lambda: ','.join(os.listdir(a['folder']))))
    own = os.path.join(os.environ['TOLOKAFORGE_FILES_DIR'], 'mine.txt')
    with open(own, 'w') as f:
        f.write('mine')
    out.append(attempt(lambda: open(own).read()))
    return '\n'.join(out)
def call(name, a):
    if name == 'detach':
        return detach()
    if name == 'read':
        return read(a)
    if name == 'big':
        return 'x' * a['n']
    if name == 'temp':
        import tempfile
        fd, p = tempfile.mkstemp()
        os.write(fd, b'scratch')
        os.close(fd)
        return p
    return a.get('text', '')
LISTING = [{"name": n, "inputSchema": {"type": "object"}} for n in ("detach", "read", "big", "echo", "temp")]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m = msg.get("method")
    if m == "initialize":
        res = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
               "serverInfo": {"name": "hostile", "version": "1"}}
    elif m == "tools/list":
        res = {"tools": LISTING}
    elif m == "tools/call":
        p = msg["params"]
        res = {"content": [{"type": "text", "text": call(p["name"], p.get("arguments") or {})}]}
    else:
        res = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": res}) + "\n")
    sys.stdout.flush()
`

// hostileMCPTask declares the server's tools (served by the pack's
// server.py under the runner's Python; no module-level TOOLS, so the runner
// starts it as a stdio server, not a registry) with the given metadata.
func hostileMCPTask(metadata obj) obj {
	var tools []any
	for _, n := range []string{"detach", "read", "big", "echo", "temp"} {
		tools = append(tools, obj{"name": n, "description": "x", "parameters": obj{"type": "object"},
			"source": obj{"toolset": "hostile", "module_path": "", "class_name": n, "invocation_style": "mcp_server",
				"mcp_server_script": "server.py"}})
	}
	doc := baseTask(tools, nil, nil)
	doc["tool_artifacts"] = obj{"server.py": b64(hostileMCP)}
	if metadata != nil {
		doc["metadata"] = metadata
	}
	return doc
}

// filesLoop waits for the detached loop's first line in a trial's
// files/loop and returns its pid and the file, checking that it runs with
// an empty environment (else the test proves nothing).
func filesLoop(t *testing.T, h *harness) (int, string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		matches, _ := filepath.Glob(filepath.Join(h.work, "*", "files", "loop"))
		if len(matches) == 1 {
			raw, _ := os.ReadFile(matches[0])
			if line, _, ok := strings.Cut(string(raw), "\n"); ok {
				pid, err := strconv.Atoi(line)
				if err != nil {
					t.Fatalf("loop wrote %q", line)
				}
				if env, err := os.ReadFile("/proc/" + line + "/environ"); err != nil || len(env) != 0 {
					t.Fatalf("the loop's environment is %q (%v), want empty: the test proves nothing", env, err)
				}
				return pid, matches[0]
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the detached loop never wrote files/loop in %s", h.work)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A pack's stdio MCP server whose tool double-forks a setsid child with an
// empty environment leaves nothing behind: the server runs under its
// trial's supervisor, so CleanupTrial ends the loop (no tag, group or
// session finds it) and reports success, and the loop's file stays gone.
func TestMCPServerDetachedEmptyEnvChildDiesWithTrial(t *testing.T) {
	needPython(t)
	h := startRunner(t, nil, withPython(), withToolLimits(proc.DefaultLimits))
	h.mustRegister(t, "mcp-escape", hostileMCPTask(nil))
	if out := h.mustExec(t, "mcp-escape", call{tool: "detach", args: `{}`, callID: "c1"}); out != "detached" {
		t.Fatalf("detach = %q", out)
	}
	pid, path := filesLoop(t, h)
	resp := h.cleanup(t, "mcp-escape")
	if !resp.GetSuccess() || resp.GetError() != "" {
		t.Errorf("CleanupTrial: success=%v error %q, want success", resp.GetSuccess(), resp.GetError())
	}
	if !gone(pid) {
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		t.Fatalf("the detached loop %d survived CleanupTrial: %s", pid, stat)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s is back after CleanupTrial removed the trial's folder: a writer survived", path)
	}
}

// A pack's stdio MCP server reads another trial's golden answer, the judge
// key and auth-token files, and lists the runner's work folder: each is an
// error (Landlock: this trial's folders and the pack, nothing else), while
// its own files folder works.
func TestMCPServerCannotReadOutsideItsTrial(t *testing.T) {
	needPython(t)
	if v, err := proc.LandlockABI(); err != nil {
		t.Skipf("no Landlock on this kernel (%v): the runner warns at startup", err)
	} else {
		t.Logf("Landlock ABI %d", v)
	}
	h := startRunner(t, nil, withPython(), withToolLimits(proc.DefaultLimits))
	secrets := t.TempDir()
	judgeKey := filepath.Join(secrets, "judge-api-key")
	authToken := filepath.Join(secrets, "auth-token")
	for _, f := range []string{judgeKey, authToken} {
		if err := os.WriteFile(f, []byte("secret-"+filepath.Base(f)), 0o440); err != nil {
			t.Fatal(err)
		}
	}
	other := baseTask(nil, nil, nil)
	other["tool_artifacts"] = obj{"golden/answer.txt": b64("the answer")}
	h.mustRegister(t, "other", other)
	golden, _ := filepath.Glob(filepath.Join(h.work, "trial-other-*", "artifacts", "golden", "answer.txt"))
	if len(golden) != 1 {
		t.Fatalf("another trial's golden answer: %v", golden)
	}
	h.mustRegister(t, "mcp-snoop", hostileMCPTask(nil))
	args := fmt.Sprintf(`{"paths":[%q,%q,%q],"folder":%q}`, golden[0], judgeKey, authToken, h.work)
	got := strings.Split(h.mustExec(t, "mcp-snoop", call{tool: "read", args: args, callID: "c1"}), "\n")
	want := []string{"ERROR PermissionError", "ERROR PermissionError", "ERROR PermissionError", "ERROR PermissionError", "READ mine"}
	what := []string{"another trial's golden answer", "the judge key", "the auth token", "listing the runner's work folder", "its own files folder"}
	if len(got) != len(want) {
		t.Fatalf("read answered %q, want %d lines", got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: %q, want %q", what[i], got[i], want[i])
		}
	}
}

// An MCP tool's result over the limit (default 1 MiB, task metadata
// max_tool_output_bytes, as for Python tools) is refused to the agent as a
// tool error naming its size and the limit, recorded as such, and the same
// server answers the next call.
func TestMCPToolOutputOverLimitIsRefused(t *testing.T) {
	needPython(t)
	pg := &probeGrader{}
	h := startRunner(t, nil, withPython(), withGrader(pg))
	for _, tc := range []struct {
		name     string
		metadata obj
		n        int
		wantErr  string // "": success with n bytes
	}{
		{name: "5 MiB under the default limit", n: 5 << 20,
			wantErr: "the tool's result is 5242880 bytes, over the limit of 1048576 bytes; it was not returned"},
		{name: "200 bytes under a task's 100", metadata: obj{"max_tool_output_bytes": 100}, n: 200,
			wantErr: "the tool's result is 200 bytes, over the limit of 100 bytes; it was not returned"},
		{name: "2 MiB under a task's 4 MiB", metadata: obj{"max_tool_output_bytes": 4 << 20}, n: 2 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "mcp-big-" + strings.NewReplacer(" ", "-", "'", "").Replace(tc.name)
			h.mustRegister(t, id, hostileMCPTask(tc.metadata))
			r := h.exec(t, id, call{tool: "big", args: fmt.Sprintf(`{"n":%d}`, tc.n), callID: "c1"})
			if tc.wantErr == "" {
				if r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS || len(r.GetOutput()) != tc.n {
					t.Fatalf("big(%d): %s, %d bytes, %q; want SUCCESS with %d bytes", tc.n, r.GetStatus(), len(r.GetOutput()), r.GetErrorMessage(), tc.n)
				}
				return
			}
			if r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_ERROR || r.GetErrorMessage() != tc.wantErr || r.GetOutput() != "" {
				t.Fatalf("big(%d): %s, %d bytes of output, error %q; want ERROR %q", tc.n, r.GetStatus(), len(r.GetOutput()), r.GetErrorMessage(), tc.wantErr)
			}
			if out := h.mustExec(t, id, call{tool: "echo", args: `{"text":"still serving"}`, callID: "c2"}); out != "still serving" {
				t.Errorf("the call after a refused result = %q", out)
			}
			recs := recordsOf(t, h, pg, id)
			if len(recs) != 2 || recs[0].Status != "error" || recs[0].Output != tc.wantErr {
				t.Errorf("history = %+v, want the refused call recorded as an error %q", recs, tc.wantErr)
			}
		})
	}
}

// A builtin's result is bounded too: db_find over a table larger than the
// task's max_tool_output_bytes is refused as a tool error naming its size
// and the limit, recorded as such, and a smaller answer still comes back;
// under the default (1 MiB) the same listing is returned.
func TestBuiltinToolOutputOverLimitIsRefused(t *testing.T) {
	pg := &probeGrader{}
	h := startRunner(t, nil, withGrader(pg))
	tables := obj{"items": []any{obj{"id": "a", "v": strings.Repeat("x", 300)}, obj{"id": "b", "v": "y"}}}
	for _, tc := range []struct {
		name     string
		metadata obj
		wantErr  string // "": the listing comes back
	}{
		{name: "over a task's 200 bytes", metadata: obj{"max_tool_output_bytes": 200},
			wantErr: "the tool's result is 338 bytes, over the limit of 200 bytes; it was not returned"},
		{name: "under the default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "builtin-big-" + strings.NewReplacer(" ", "-", "'", "").Replace(tc.name)
			doc := baseTask([]any{tool("db_find")}, nil, tables)
			if tc.metadata != nil {
				doc["metadata"] = tc.metadata
			}
			h.mustRegister(t, id, doc)
			r := h.exec(t, id, call{tool: "db_find", args: `{"table":"items"}`, callID: "c1"})
			if tc.wantErr == "" {
				if r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS || len(r.GetOutput()) != 338 {
					t.Fatalf("db_find: %s, %d bytes, %q; want SUCCESS with 338 bytes", r.GetStatus(), len(r.GetOutput()), r.GetErrorMessage())
				}
				return
			}
			if r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_ERROR || r.GetErrorMessage() != tc.wantErr || r.GetOutput() != "" {
				t.Fatalf("db_find: %s, %d bytes of output, error %q; want ERROR %q", r.GetStatus(), len(r.GetOutput()), r.GetErrorMessage(), tc.wantErr)
			}
			if out := h.mustExec(t, id, call{tool: "db_find", args: `{"table":"items","filter":{"id":"b"}}`, callID: "c2"}); out != `[{"id":"b","v":"y"}]` {
				t.Errorf("the call after a refused result = %q", out)
			}
			recs := recordsOf(t, h, pg, id)
			if len(recs) != 2 || recs[0].Status != "error" || recs[0].Output != tc.wantErr {
				t.Errorf("history = %+v, want the refused call recorded as an error %q", recs, tc.wantErr)
			}
		})
	}
}

// A confined MCP server still has somewhere to put temporary files: its
// TMPDIR is the trial's tmp folder, which it may write (it may write neither
// the trial's own folder nor the machine's /tmp).
func TestMCPServerHasAWritableTMPDIR(t *testing.T) {
	needPython(t)
	h := startRunner(t, nil, withPython(), withToolLimits(proc.DefaultLimits))
	h.mustRegister(t, "mcp-temp", hostileMCPTask(nil))
	r := h.exec(t, "mcp-temp", call{tool: "temp", args: `{}`, callID: "c1"})
	if r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
		t.Fatalf("temp: %s %q, want SUCCESS", r.GetStatus(), r.GetErrorMessage())
	}
	dirs, _ := filepath.Glob(filepath.Join(h.work, "trial-mcp-temp-*"))
	if len(dirs) != 1 || filepath.Dir(r.GetOutput()) != filepath.Join(dirs[0], "tmp") {
		t.Fatalf("the temporary file is %q, want it in the trial's tmp folder (trial %v)", r.GetOutput(), dirs)
	}
	if b, err := os.ReadFile(r.GetOutput()); err != nil || string(b) != "scratch" {
		t.Errorf("the temporary file holds %q (%v), want scratch", b, err)
	}
}

// A stateful MCP tool whose result is refused for its size has its changes
// dropped, as a Python tool's are: the server is reloaded from the DB before
// the next call, so a later successful call does not write them back. Under
// a 1-byte limit testkit's incr answers 1 to 9 for key k; the tenth answer,
// "10", is refused; an incr of key j then succeeds and its write-back holds
// k at 9.
func TestMCPToolOverLimitDropsItsChanges(t *testing.T) {
	h := startRunner(t, nil)
	doc := baseTask([]any{testkitTool("incr", nil)}, nil, obj{"counters": []any{}})
	doc["metadata"] = obj{"max_tool_output_bytes": 1}
	h.mustRegister(t, "mcp-drop", doc)
	for i := 1; i <= 9; i++ {
		if got := h.mustExec(t, "mcp-drop", call{tool: "incr", args: `{"key":"k"}`, callID: fmt.Sprintf("c%d", i)}); got != strconv.Itoa(i) {
			t.Fatalf("incr %d = %q", i, got)
		}
	}
	const refused = "the tool's result is 2 bytes, over the limit of 1 bytes; it was not returned"
	r := h.exec(t, "mcp-drop", call{tool: "incr", args: `{"key":"k"}`, callID: "c10"})
	if r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_ERROR || r.GetErrorMessage() != refused {
		t.Fatalf("incr c10: %s %q, want ERROR %q", r.GetStatus(), r.GetErrorMessage(), refused)
	}
	if got := h.mustExec(t, "mcp-drop", call{tool: "incr", args: `{"key":"j"}`, callID: "c11"}); got != "1" {
		t.Fatalf("incr j = %q", got)
	}
	const want = `{"counters":[{"id":"k","n":9},{"id":"j","n":1}]}`
	if got := h.state(t, "mcp-drop", false, "counters").GetStateJson(); got != want {
		t.Errorf("the DB holds %s, want %s (the refused call's change dropped)", got, want)
	}
}
