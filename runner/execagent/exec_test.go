package execagent_test

import (
	"context"
	"os"
	"os/user"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "tolokaforge.io/operator/api/execagentpb"
	"tolokaforge.io/operator/runner/execagent"
)

func TestExecExitCodes(t *testing.T) {
	a := startAgent(t, nil)
	for _, tc := range []struct {
		name, cmd      string
		argv           []string
		code           int32
		signal, stdout string
		stderr         string
	}{
		{name: "zero", cmd: "echo out; echo err >&2", code: 0, stdout: "out\n", stderr: "err\n"},
		{name: "non-zero", cmd: "exit 3", code: 3},
		{name: "killed by a signal", cmd: "kill -KILL $$", code: -1, signal: "SIGKILL"},
		{name: "missing command", cmd: "no-such-command-xyz", code: 127, stderr: "no-such-command-xyz"},
		{name: "argv runs directly", argv: []string{"printf", "%s|", "a b", "$HOME"}, stdout: "a b|$HOME|"},
		{name: "bash features", cmd: "[[ -n x ]] && echo ${BASH_VERSION:+bash}", stdout: "bash\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := a.c.Exec(context.Background(), &pb.ExecRequest{Command: tc.cmd, Argv: tc.argv, TimeoutMs: 10_000})
			if err != nil {
				t.Fatal(err)
			}
			if resp.ExitCode != tc.code || resp.Signal != tc.signal || resp.TimedOut {
				t.Fatalf("exit %d signal %q timed out %v, want %d %q false (stderr %q)", resp.ExitCode, resp.Signal, resp.TimedOut, tc.code, tc.signal, resp.Stderr)
			}
			if string(resp.Stdout) != tc.stdout {
				t.Errorf("stdout %q, want %q", resp.Stdout, tc.stdout)
			}
			if !strings.Contains(string(resp.Stderr), tc.stderr) {
				t.Errorf("stderr %q, want it to contain %q", resp.Stderr, tc.stderr)
			}
		})
	}
}

func TestExecRefusesBadRequests(t *testing.T) {
	a := startAgent(t, nil)
	for _, tc := range []struct {
		name string
		req  *pb.ExecRequest
		code codes.Code
		msg  string
	}{
		{"no timeout", &pb.ExecRequest{Command: "true"}, codes.InvalidArgument, "timeout_ms"},
		{"nothing to run", &pb.ExecRequest{TimeoutMs: 1000}, codes.InvalidArgument, "neither command nor argv"},
		{"both", &pb.ExecRequest{Command: "true", Argv: []string{"true"}, TimeoutMs: 1000}, codes.InvalidArgument, "both"},
		{"unknown user", &pb.ExecRequest{Command: "true", User: "no-such-user-xyz", TimeoutMs: 1000}, codes.InvalidArgument, "no-such-user-xyz"},
		{"missing workdir", &pb.ExecRequest{Command: "true", Workdir: "/no/such/dir", TimeoutMs: 1000}, codes.NotFound, "/no/such/dir"},
		{"relative workdir", &pb.ExecRequest{Command: "true", Workdir: "tmp", TimeoutMs: 1000}, codes.InvalidArgument, `"tmp"`},
		{"argv not found", &pb.ExecRequest{Argv: []string{"no-such-binary-xyz"}, TimeoutMs: 1000}, codes.InvalidArgument, "no-such-binary-xyz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.c.Exec(context.Background(), tc.req)
			if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %s naming %q", err, tc.code, tc.msg)
			}
		})
	}
}

func TestExecTimeout(t *testing.T) {
	a := startAgent(t, nil)
	for _, tc := range []struct {
		name, cmd    string
		grace        int64
		signal       string
		minMS, maxMS int64
	}{
		// bash execs sleep, which dies of the TERM at once.
		{"TERM suffices", "sleep 30", 5000, "SIGTERM", 150, 3000},
		// Both bash and its sleep ignore TERM: KILL after the grace.
		{"TERM trapped, KILL after grace", "trap '' TERM; sleep 30; echo survived", 400, "SIGKILL", 550, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			resp, err := a.c.Exec(context.Background(), &pb.ExecRequest{Command: tc.cmd, TimeoutMs: 200, KillGraceMs: tc.grace})
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start).Milliseconds()
			if !resp.TimedOut || resp.ExitCode != -1 || resp.Signal != tc.signal {
				t.Fatalf("timed out %v exit %d signal %q, want true -1 %q", resp.TimedOut, resp.ExitCode, resp.Signal, tc.signal)
			}
			if took < tc.minMS || took > tc.maxMS || resp.DurationMs < tc.minMS {
				t.Fatalf("took %d ms (reported %d), want within [%d, %d]", took, resp.DurationMs, tc.minMS, tc.maxMS)
			}
			if strings.Contains(string(resp.Stdout), "survived") {
				t.Fatalf("the command survived: %q", resp.Stdout)
			}
		})
	}
}

func TestExecTruncatesHeadAndTail(t *testing.T) {
	a := startAgent(t, nil)
	// 500 a's then 500 b's on stdout, 300 c's then 300 d's on stderr.
	cmd := `printf '%0500d' 0 | tr 0 a; printf '%0500d' 0 | tr 0 b; { printf '%0300d' 0 | tr 0 c; printf '%0300d' 0 | tr 0 d; } >&2`
	for _, tc := range []struct {
		name           string
		max            int64
		stdout, stderr string
		outCut, errCut bool
	}{
		{"both cut", 100, strings.Repeat("a", 50) + strings.Repeat("b", 50), strings.Repeat("c", 50) + strings.Repeat("d", 50), true, true},
		{"odd cap: the tail gets the extra byte", 11, "aaaaabbbbbb", "cccccdddddd", true, true},
		{"stderr fits", 600, strings.Repeat("a", 300) + strings.Repeat("b", 300), strings.Repeat("c", 300) + strings.Repeat("d", 300), true, false},
		{"nothing cut", 1000, strings.Repeat("a", 500) + strings.Repeat("b", 500), strings.Repeat("c", 300) + strings.Repeat("d", 300), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := a.c.Exec(context.Background(), &pb.ExecRequest{Command: cmd, TimeoutMs: 10_000, MaxOutputBytes: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Stdout) != tc.stdout || resp.StdoutBytes != 1000 || resp.StdoutTruncated != tc.outCut {
				t.Errorf("stdout %q (%d bytes, truncated %v), want %q (1000, %v)", resp.Stdout, resp.StdoutBytes, resp.StdoutTruncated, tc.stdout, tc.outCut)
			}
			if string(resp.Stderr) != tc.stderr || resp.StderrBytes != 600 || resp.StderrTruncated != tc.errCut {
				t.Errorf("stderr %q (%d bytes, truncated %v), want %q (600, %v)", resp.Stderr, resp.StderrBytes, resp.StderrTruncated, tc.stderr, tc.errCut)
			}
		})
	}
}

func TestExecBackgroundChildDoesNotBlock(t *testing.T) {
	a := startAgent(t, nil)
	start := time.Now()
	resp := a.run(t, "sleep 1000 & echo hi")
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the reply took %s; a background child held it", took)
	}
	if string(resp.Stdout) != "hi\n" || resp.ExitCode != 0 {
		t.Fatalf("stdout %q exit %d, want \"hi\\n\" 0", resp.Stdout, resp.ExitCode)
	}
	if _, err := a.c.KillAll(context.Background(), &pb.KillAllRequest{GraceMs: 100}); err != nil {
		t.Fatal(err)
	}
}

func TestExecStdinWorkdirAndEnv(t *testing.T) {
	a := startAgent(t, nil)
	dir := t.TempDir()
	resp, err := a.c.Exec(context.Background(), &pb.ExecRequest{
		Command: `cat; echo " $PWD $FOO"`, Stdin: []byte("in put"), Workdir: dir,
		Env: map[string]string{"FOO": "bar"}, TimeoutMs: 10_000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "in put " + dir + " bar\n"; string(resp.Stdout) != want {
		t.Fatalf("stdout %q, want %q", resp.Stdout, want)
	}
}

func TestExecCleanEnv(t *testing.T) {
	t.Setenv("EXECAGENT_TEST_AGENT_VAR", "agent-value")
	a := startAgent(t, nil)
	for _, tc := range []struct {
		name  string
		clean bool
		want  string
	}{
		{"inherited", false, "agent-value|"},
		{"clean", true, "|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := a.c.Exec(context.Background(), &pb.ExecRequest{
				Command: `printf '%s|' "$EXECAGENT_TEST_AGENT_VAR"; [ -n "$HOME" ] || echo no-home; [ "$X" = y ] || echo no-x; ` +
					`if [ -n "$EXECAGENT_TEST_AGENT_VAR" ]; then :; else printf %s "$PATH"; fi`,
				CleanEnv: tc.clean, Env: map[string]string{"X": "y"}, TimeoutMs: 10_000,
			})
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Stdout) != tc.want {
				t.Fatalf("stdout %q, want %q (stderr %q)", resp.Stdout, tc.want, resp.Stderr)
			}
		})
	}
}

func TestExecTokenNotInChildEnvironment(t *testing.T) {
	t.Setenv(execagent.TokenEnv, "planted-token-value")
	a := startAgent(t, nil)
	if v, ok := os.LookupEnv(execagent.TokenEnv); ok {
		t.Fatalf("New left %s=%q in the environment", execagent.TokenEnv, v)
	}
	// The agent's own token must not reach a child either, whatever its
	// environment held: plant it under another name.
	t.Setenv("SOME_OTHER_VAR", a.token)
	resp := a.run(t, "env")
	if strings.Contains(string(resp.Stdout), a.token) || strings.Contains(string(resp.Stdout), execagent.TokenEnv) || strings.Contains(string(resp.Stdout), "planted-token-value") {
		t.Fatalf("the child's environment holds the token:\n%s", resp.Stdout)
	}
	if !strings.Contains(string(resp.Stdout), "PATH=") {
		t.Fatalf("the child's environment lost PATH:\n%s", resp.Stdout)
	}
}

func TestExecAsUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("switching users needs root; this test runs as uid", os.Getuid())
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody in /etc/passwd: %v", err)
	}
	a := startAgent(t, nil)
	for _, tc := range []struct{ name, user string }{{"by name", "nobody"}, {"by uid", nobody.Uid}} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := a.c.Exec(context.Background(), &pb.ExecRequest{Command: "id -u; id -g; touch /root/execagent-test-probe 2>/dev/null && echo wrote || echo denied", User: tc.user, Workdir: "/", TimeoutMs: 10_000})
			if err != nil {
				t.Fatal(err)
			}
			want := nobody.Uid + "\n" + nobody.Gid + "\ndenied\n"
			if string(resp.Stdout) != want {
				os.Remove("/root/execagent-test-probe")
				t.Fatalf("stdout %q, want %q (stderr %q)", resp.Stdout, want, resp.Stderr)
			}
		})
	}
}

func TestExecCancelledCallKillsTheCommand(t *testing.T) {
	a := startAgent(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	marker := t.TempDir() + "/pid"
	_, err := a.c.Exec(ctx, &pb.ExecRequest{Command: "echo $$ > " + marker + "; exec sleep 30", TimeoutMs: 60_000, KillGraceMs: 100})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("error %v, want DeadlineExceeded", err)
	}
	// The command dies within the grace, whatever the client saw.
	deadline := time.Now().Add(3 * time.Second)
	for {
		raw, _ := os.ReadFile(marker)
		pid := strings.TrimSpace(string(raw))
		if _, err := os.Stat("/proc/" + pid); pid != "" && err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command (pid %q) still runs after the call ended", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A command that removes the agent's state directory does not break the
// next one.
func TestExecRecreatesStateDir(t *testing.T) {
	a := startAgent(t, nil)
	if r := a.run(t, "rm -rf "+a.state); r.ExitCode != 0 {
		t.Fatalf("rm: exit %d %q", r.ExitCode, r.Stderr)
	}
	if r := a.run(t, "echo again"); string(r.Stdout) != "again\n" {
		t.Fatalf("after the state directory went: %q", r.Stdout)
	}
}
