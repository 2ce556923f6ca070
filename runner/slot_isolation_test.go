package runner_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice"
	dbclient "tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/client"
	"tolokaforge.io/operator/runner/proc"
)

// Warm slots (issue 36, docs/warm-slots.md): one runner serves many trials
// one after another. These tests play a hostile pack in trial k and check
// that trial k+1 on the same runner is graded exactly as alone, and that a
// slot's CleanupTrial (--slot) names whatever it left behind.

// startDBWithToken is startDB with the slot's bearer token required on every
// request (as in a pod); its client presents it.
func startDBWithToken(tb testing.TB, token string) *dbHandle {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dbservice.New(dbservice.Options{AuthToken: token}).Serve(ctx, ln) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("DB service: %v", err)
		}
	})
	tb.Cleanup(stop)
	url := "http://" + ln.Addr().String()
	return &dbHandle{url: url, c: dbclient.New(url, dbclient.WithRetries(0), dbclient.WithToken(token)), stop: stop}
}

// slotRunner is `tolokaforge runner --slot` in a process of its own (this
// test binary re-executed, as environ_test.go does): the subreaper of what
// its tools leave, with its own temp dir, as in a slot pod.
type slotRunner struct {
	c         *client.Client
	work, tmp string
}

const slotToken = "slot-token-the-tools-never-see"

func startSlotRunner(t *testing.T, db *dbHandle) *slotRunner {
	t.Helper()
	dir := t.TempDir()
	r := &slotRunner{work: filepath.Join(dir, "work"), tmp: filepath.Join(dir, "tmp")}
	for _, d := range []string{r.work, r.tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(slotToken), 0o400); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startRunnerProcess(t, addr, []string{self, "runner", "--slot", "--listen=" + addr, "--db-service-url=" + db.url,
		"--work-dir=" + r.work, "--auth-token-file=" + tokenFile, "--log-level=error", "--drain-timeout=1s",
		"--python=" + debianPython, "--tool-launcher=" + toolLauncher}, "TMPDIR="+r.tmp)
	c, err := client.Dial(context.Background(), addr, client.WithToken(slotToken))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r.c = c
	return r
}

func (r *slotRunner) register(t *testing.T, id string, doc obj) {
	t.Helper()
	resp, err := r.c.RegisterTrial(ctxT(t), &runnerpb.RegisterTrialRequest{TrialId: id, TrialSpecJson: specJSON(t, id, doc),
		EngineProtocolVersion: task.EngineProtocolVersion})
	if err != nil || !resp.GetSuccess() {
		t.Fatalf("RegisterTrial(%s): %v %s", id, err, resp.GetError())
	}
}

func (r *slotRunner) exec(t *testing.T, id, tool, args string) string {
	t.Helper()
	resp, err := r.c.ExecuteTool(ctxT(t), &runnerpb.ExecuteToolRequest{TrialId: id, ToolName: tool, ArgumentsJson: args,
		CallId: fmt.Sprintf("%s-%d", tool, time.Now().UnixNano())})
	if err != nil || resp.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
		t.Fatalf("ExecuteTool(%s %s): %v %s %s", tool, args, err, resp.GetStatus(), resp.GetErrorMessage())
	}
	return resp.GetOutput()
}

func (r *slotRunner) cleanup(t *testing.T, id string) *runnerpb.CleanupTrialResponse {
	t.Helper()
	resp, err := r.c.CleanupTrial(ctxT(t), &runnerpb.CleanupTrialRequest{TrialId: id})
	if err != nil {
		t.Fatalf("CleanupTrial(%s): %v", id, err)
	}
	return resp
}

// hostileTools are escapeTools (a detached, setsid, empty-environment loop)
// and: Plant writes "planted" to each path (making its folder when missing),
// answering WROTE or the error's type per path; Poke sends the DB service
// requests that would create, change, delete and read a trial, without the
// slot's token, answering each method and its HTTP status.
const hostileTools = escapeTools +
	"import json, urllib.request, urllib.error\n" +
	"class Plant:\n    @staticmethod\n    def invoke(data, paths):\n" +
	"        out = []\n" +
	"        for p in paths:\n" +
	"            try:\n" +
	"                if not os.path.isdir(os.path.dirname(p)):\n                    os.mkdir(os.path.dirname(p))\n" +
	"                with open(p, 'w') as f:\n                    f.write('planted')\n" +
	"                out.append('WROTE')\n" +
	"            except OSError as e:\n                out.append('ERROR ' + type(e).__name__)\n" +
	"        return '\\n'.join(out)\n" +
	"class Poke:\n    @staticmethod\n    def invoke(data, url, trial):\n" +
	"        out = []\n" +
	"        for method, path, body in [\n" +
	"            ('POST', '/trials/' + trial + '/init', {'tables': {'items': [{'id': 'evil'}]}}),\n" +
	"            ('PATCH', '/trials/' + trial + '/state/items', {'operations': [{'op': 'insert', 'record': {'id': 'evil'}}]}),\n" +
	"            ('DELETE', '/trials/' + trial, None),\n" +
	"            ('GET', '/trials/' + trial + '/state', None)]:\n" +
	"            req = urllib.request.Request(url + path, method=method, headers={'Content-Type': 'application/json'},\n" +
	"                data=None if body is None else json.dumps(body).encode())\n" +
	"            try:\n" +
	"                with urllib.request.urlopen(req, timeout=5) as r:\n                    out.append(method + ' ' + str(r.status))\n" +
	"            except urllib.error.HTTPError as e:\n                out.append(method + ' ' + str(e.code))\n" +
	"            except urllib.error.URLError as e:\n                out.append(method + ' ' + type(e.reason).__name__)\n" +
	"            except OSError as e:\n                out.append(method + ' ' + type(e).__name__)\n" +
	"        return ' '.join(out)\n"

func hostileTask() obj {
	doc := baseTask([]any{pyTool("escape", "hostile.tools", "Escape"), pyTool("plant", "hostile.tools", "Plant"),
		pyTool("poke", "hostile.tools", "Poke")}, nil, obj{"items": []any{}})
	doc["tool_artifacts"] = obj{"hostile/__init__.py": "", "hostile/tools.py": b64(hostileTools)}
	return doc
}

// cleanTask inserts one record; its grade is the golden state's hash. It
// has a Python tool too, so the slot's Python host serves it.
func cleanTask() obj {
	doc := baseTask([]any{tool("db_insert"), pyTool("ping", "esc.tools", "Ping")}, nil, obj{"items": []any{obj{"id": "seed"}}})
	doc["tool_artifacts"] = obj{"esc/__init__.py": "", "esc/tools.py": b64(escapeTools)}
	doc["grading"] = obj{"weights": obj{"state_checks": 1}, "state_checks": obj{"hash_enabled": true,
		"golden_actions": []any{obj{"tool_name": "db_insert", "arguments": obj{"table": "items", "record": obj{"id": "i1", "v": "ok"}}}}}}
	return doc
}

// runClean plays the clean trial id on r and returns its grade and state.
func runClean(t *testing.T, r *slotRunner, id string) (*runnerpb.Grade, *runnerpb.GetStateResponse) {
	t.Helper()
	r.register(t, id, cleanTask())
	if out := r.exec(t, id, "ping", `{}`); out != "pong" {
		t.Fatalf("ping = %q", out)
	}
	r.exec(t, id, "db_insert", `{"table":"items","record":{"id":"i1","v":"ok"}}`)
	st, err := r.c.GetState(ctxT(t), &runnerpb.GetStateRequest{TrialId: id, IncludeUnstable: true})
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.c.GradeTrial(ctxT(t), &runnerpb.GradeTrialRequest{TrialId: id, TerminationReason: "agent_done"})
	if err != nil || !g.GetSuccess() {
		t.Fatalf("GradeTrial(%s): %v %s", id, err, g.GetError())
	}
	return g.GetGrade(), st
}

// Trial k's Python tool leaves a detached empty-environment loop, writes
// outside its folder and edits the DB of the trial id it guesses next; trial
// k+1 on the same slot runner is graded exactly as the same task alone on a
// fresh runner, and every CleanupTrial reports the slot clean.
func TestSlotRunnerTrialAfterAHostileOneIsGradedAsAlone(t *testing.T) {
	needPython(t)
	db := startDBWithToken(t, slotToken)
	r := startSlotRunner(t, db)
	const hostile, next = "slot-trial-1", "slot-trial-2"

	r.register(t, hostile, hostileTask())
	if out := r.exec(t, hostile, "escape", `{}`); out != "detached" {
		t.Fatalf("escape = %q", out)
	}
	loop, _ := loopPid(t, &harness{work: r.work})

	t.Run("writes outside its folder are refused", func(t *testing.T) {
		if v, err := proc.LandlockABI(); err != nil || v == 0 {
			t.Skipf("no Landlock on this kernel (ABI %d, %v): tools are not confined to their trial's folders, so the writes are not attempted", v, err)
		}
		root := filepath.Join(os.TempDir(), fmt.Sprintf("tolokaforge-slot-planted-%d", os.Getpid()))
		t.Cleanup(func() { _ = os.Remove(root) })
		paths := []string{
			filepath.Join(r.work, "planted"), // the work directory's root
			filepath.Join(r.tmp, "planted"),  // the runner's temp dir
			root,                             // the machine's /tmp
			filepath.Join(r.work, "trial-"+next+"-guess", "planted"), // the next trial's would-be folder
		}
		args := fmt.Sprintf(`{"paths":[%q,%q,%q,%q]}`, paths[0], paths[1], paths[2], paths[3])
		got := strings.Split(r.exec(t, hostile, "plant", args), "\n")
		for i, p := range paths {
			if i >= len(got) || got[i] != "ERROR PermissionError" {
				t.Errorf("writing %s: %q, want ERROR PermissionError (all: %q)", p, got, got)
			}
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%s exists after the refused write", p)
			}
		}
	})

	// The tool knows the DB service's address (the task or a guess at
	// 127.0.0.1), not the slot's token. Landlock from ABI 4 refuses it any
	// TCP connection; below that the DB service refuses it (401), as it
	// refuses the same requests sent from outside any confinement.
	t.Run("edits of the next trial's DB are refused", func(t *testing.T) {
		want := "POST 401 PATCH 401 DELETE 401 GET 401"
		if v, err := proc.LandlockABI(); err == nil && v >= 4 {
			want = "POST PermissionError PATCH PermissionError DELETE PermissionError GET PermissionError"
		}
		if out := r.exec(t, hostile, "poke", fmt.Sprintf(`{"url":%q,"trial":%q}`, db.url, next)); out != want {
			t.Errorf("poke = %q, want %q", out, want)
		}
		for _, m := range []struct{ method, path, body string }{
			{http.MethodPost, "/trials/" + next + "/init", `{"tables":{"items":[{"id":"evil"}]}}`},
			{http.MethodPatch, "/trials/" + next + "/state/items", `{"operations":[{"op":"insert","record":{"id":"evil"}}]}`},
			{http.MethodDelete, "/trials/" + next, ""},
			{http.MethodGet, "/trials/" + next + "/state", ""},
		} {
			req, err := http.NewRequest(m.method, db.url+m.path, strings.NewReader(m.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s without the slot's token: %d, want 401", m.method, m.path, resp.StatusCode)
			}
		}
	})

	if resp := r.cleanup(t, hostile); !resp.GetSuccess() || resp.GetError() != "" {
		t.Fatalf("CleanupTrial(%s): success=%v error %q, want the slot back to its baseline", hostile, resp.GetSuccess(), resp.GetError())
	}
	if !gone(loop) {
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(loop) + "/stat")
		t.Fatalf("the detached loop %d survived CleanupTrial: %s", loop, stat)
	}
	if _, err := db.c.Hash(ctxT(t), next); !errorsIs(err, dbclient.ErrTrialNotFound) {
		t.Fatalf("the DB service holds %s before it is registered: %v", next, err)
	}

	slotGrade, slotState := runClean(t, r, next)
	if resp := r.cleanup(t, next); !resp.GetSuccess() || resp.GetError() != "" {
		t.Fatalf("CleanupTrial(%s): success=%v error %q", next, resp.GetSuccess(), resp.GetError())
	}

	alone := startSlotRunner(t, startDBWithToken(t, slotToken))
	aloneGrade, aloneState := runClean(t, alone, next)
	if aloneGrade.GetScore() != 1 || !strings.Contains(aloneGrade.GetReasons(), "State: hash match") {
		t.Fatalf("the clean task alone: %v, want a hash match: the comparison proves nothing", aloneGrade)
	}
	if !proto.Equal(slotGrade, aloneGrade) {
		t.Errorf("after the hostile trial: grade %v\nalone: %v", slotGrade, aloneGrade)
	}
	if slotState.GetStableHash() != aloneState.GetStableHash() || slotState.GetStateJson() != aloneState.GetStateJson() {
		t.Errorf("after the hostile trial: state %s (%s)\nalone: %s (%s)", slotState.GetStateJson(), slotState.GetStableHash(),
			aloneState.GetStateJson(), aloneState.GetStableHash())
	}
}

// A slot runner's CleanupTrial answers success = false naming what is left
// that no registered trial owns: a file in its temp dir once no trial is
// left, a trial folder nobody registered, a DB trial; and nothing while
// what is there is another registered trial's (its processes included).
func TestSlotCleanupNamesWhatRemained(t *testing.T) {
	needPython(t)
	db := startDBWithToken(t, slotToken)
	r := startSlotRunner(t, db)
	write := func(t *testing.T, p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("left"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stray := filepath.Join(r.tmp, "stray.txt")
	ghost := filepath.Join(r.work, "trial-ghost-x1")
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T)
		id      string
		noReg   bool // CleanupTrial of a trial that was never registered
		want    string
		undo    func(t *testing.T)
		recheck bool // once undone, the same cleanup answers success
	}{
		{name: "a file in the temp dir with no trial left", setup: func(t *testing.T) { write(t, stray) }, id: "n1",
			want: "trial 'n1' was cleaned up but the slot is not back to its baseline: the temp directory " + r.tmp +
				" is not empty with no trial registered: stray.txt",
			undo: func(t *testing.T) { _ = os.Remove(stray) }},
		{name: "a trial folder nobody registered", setup: func(t *testing.T) { write(t, filepath.Join(ghost, "files", "x")) }, id: "n2",
			want: "trial 'n2' was cleaned up but the slot is not back to its baseline: the work directory " + r.work +
				" holds what no registered trial owns: trial-ghost-x1",
			undo: func(t *testing.T) { _ = os.RemoveAll(ghost) }},
		{name: "both at once", setup: func(t *testing.T) { write(t, stray); write(t, filepath.Join(ghost, "x")) }, id: "n3",
			want: "trial 'n3' was cleaned up but the slot is not back to its baseline: the work directory " + r.work +
				" holds what no registered trial owns: trial-ghost-x1; the temp directory " + r.tmp + " is not empty with no trial registered: stray.txt",
			undo: func(t *testing.T) { _ = os.Remove(stray); _ = os.RemoveAll(ghost) }},
		{name: "a DB trial of a trial never registered", id: "ghost", noReg: true,
			setup: func(t *testing.T) {
				if _, err := db.c.Init(ctxT(t), "ghost", dbInit(obj{"items": []any{}})); err != nil {
					t.Fatal(err)
				}
			},
			want: "trial 'ghost' was not registered, and the slot is not back to its baseline: the DB service still holds trial 'ghost'",
			undo: func(t *testing.T) {
				if err := db.c.Delete(ctxT(t), "ghost"); err != nil {
					t.Fatal(err)
				}
			}, recheck: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			if !tc.noReg {
				r.register(t, tc.id, baseTask([]any{tool("db_insert")}, nil, obj{"items": []any{}}))
			}
			resp := r.cleanup(t, tc.id)
			if resp.GetSuccess() || resp.GetError() != tc.want {
				t.Errorf("CleanupTrial: success=%v error %q\nwant failure %q", resp.GetSuccess(), resp.GetError(), tc.want)
			}
			tc.undo(t)
			if resp := r.cleanup(t, tc.id); !resp.GetSuccess() || resp.GetError() != "" {
				t.Errorf("CleanupTrial again once undone: success=%v error %q, want success", resp.GetSuccess(), resp.GetError())
			}
		})
	}

	t.Run("another registered trial's folder, processes and temp files are not leftovers", func(t *testing.T) {
		r.register(t, "other", escapeTask())
		if out := r.exec(t, "other", "escape", `{}`); out != "detached" {
			t.Fatalf("escape = %q", out)
		}
		loop, _ := loopPid(t, &harness{work: r.work})
		write(t, stray)
		defer func() { _ = os.Remove(stray) }()
		r.register(t, "n4", baseTask([]any{tool("db_insert")}, nil, obj{"items": []any{}}))
		if resp := r.cleanup(t, "n4"); !resp.GetSuccess() || resp.GetError() != "" {
			t.Errorf("CleanupTrial(n4) beside a registered trial: success=%v error %q, want success", resp.GetSuccess(), resp.GetError())
		}
		if gone(loop) {
			t.Fatalf("the other trial's loop %d died with n4's cleanup", loop)
		}
		// Once it goes too, the temp file is nobody's.
		want := "trial 'other' was cleaned up but the slot is not back to its baseline: the temp directory " + r.tmp +
			" is not empty with no trial registered: stray.txt"
		if resp := r.cleanup(t, "other"); resp.GetSuccess() || resp.GetError() != want {
			t.Errorf("CleanupTrial(other): success=%v error %q\nwant failure %q", resp.GetSuccess(), resp.GetError(), want)
		}
		if !gone(loop) {
			t.Errorf("the other trial's loop %d survived its cleanup", loop)
		}
	})
}

// A process below the runner that no trial started (here: a child of the
// test process, which is the in-process runner's) is named by a slot's
// CleanupTrial; once it is gone the slot is clean. One that is gone within
// the recheck (a process just forked for another trial, before its exec
// tags it; one just killed) is not named.
func TestSlotCleanupNamesAStrayProcess(t *testing.T) {
	h := startRunner(t, nil, func(c *runner.Config) { c.Slot, c.TempDir = true, t.TempDir() })
	doc := baseTask([]any{tool("db_insert")}, nil, obj{"items": []any{}})

	h.mustRegister(t, "p0", doc)
	brief := exec.Command("sleep", "0.05")
	if err := brief.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = brief.Wait() }()
	if resp := h.cleanup(t, "p0"); !resp.GetSuccess() || resp.GetError() != "" {
		t.Errorf("CleanupTrial beside a process gone within the recheck: success=%v error %q, want success", resp.GetSuccess(), resp.GetError())
	}

	stray := exec.Command("sleep", "60")
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = stray.Wait(); close(exited) }()
	t.Cleanup(func() { _ = stray.Process.Kill(); <-exited })

	h.mustRegister(t, "p1", doc)
	want := fmt.Sprintf("trial 'p1' was cleaned up but the slot is not back to its baseline: 1 process below the runner belongs to no registered trial: %d (sleep)", stray.Process.Pid)
	if resp := h.cleanup(t, "p1"); resp.GetSuccess() || resp.GetError() != want {
		t.Errorf("CleanupTrial: success=%v error %q\nwant failure %q", resp.GetSuccess(), resp.GetError(), want)
	}
	_ = stray.Process.Kill()
	<-exited
	h.mustRegister(t, "p2", doc)
	if resp := h.cleanup(t, "p2"); !resp.GetSuccess() || resp.GetError() != "" {
		t.Errorf("CleanupTrial once the stray is gone: success=%v error %q, want success", resp.GetSuccess(), resp.GetError())
	}
}

// Outside slot mode CleanupTrial checks nothing more: a per-attempt pod dies
// with its trial anyway.
func TestCleanupOutsideSlotModeChecksNoBaseline(t *testing.T) {
	tmp := t.TempDir()
	h := startRunner(t, nil, func(c *runner.Config) { c.TempDir = tmp })
	if err := os.WriteFile(filepath.Join(tmp, "stray.txt"), []byte("left"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(h.work, "trial-ghost-x1"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.mustRegister(t, "plain", baseTask([]any{tool("db_insert")}, nil, obj{"items": []any{}}))
	if resp := h.cleanup(t, "plain"); !resp.GetSuccess() || resp.GetError() != "" {
		t.Errorf("CleanupTrial: success=%v error %q, want success", resp.GetSuccess(), resp.GetError())
	}
	if resp := h.cleanup(t, "never-registered"); !resp.GetSuccess() {
		t.Errorf("CleanupTrial of an unknown trial: %q, want success", resp.GetError())
	}
}
