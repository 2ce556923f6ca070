package runner

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner/client"
)

func TestParseFlags(t *testing.T) {
	f, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.listen != "127.0.0.1:50051" || f.minProtocol != 2 || f.drainTimeout != 10*time.Second || f.maxTool != 10*time.Minute || f.logLevel != 0 || f.dbURL != "" || f.workDir != "" || f.slot {
		t.Fatalf("defaults: %+v", f)
	}
	f, err = parseFlags([]string{"--listen", ":0", "--db-service-url", "http://db:8000", "--min-engine-protocol", "3", "--work-dir", "/w", "--drain-timeout", "2s", "--log-level", "debug", "--tool-launcher", "/opt/toolexec", "--slot"}, io.Discard)
	if err != nil || f.listen != ":0" || f.dbURL != "http://db:8000" || f.minProtocol != 3 || f.workDir != "/w" || f.drainTimeout != 2*time.Second || f.logLevel != 1 || f.launcher != "/opt/toolexec" || !f.slot {
		t.Fatalf("parsed %+v, %v", f, err)
	}
	var help strings.Builder
	if _, err := parseFlags([]string{"--help"}, &help); !strings.Contains(help.String(), "-tool-launcher") || !strings.Contains(help.String(), "tolokaforge-toolexec") {
		t.Errorf("--help (%v) does not document --tool-launcher:\n%s", err, help.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--min-engine-protocol", "0"}, "runner flags: --min-engine-protocol must be >= 1, got 0"},
		{[]string{"--drain-timeout", "0s"}, "runner flags: --drain-timeout must be positive, got 0s"},
		{[]string{"--max-tool-timeout", "-1s"}, "runner flags: --max-tool-timeout must be positive, got -1s"},
		{[]string{"--db-service-url", "db:8000"}, `runner flags: --db-service-url "db:8000": want an http:// or https:// URL`},
		{[]string{"--log-level", "loud"}, `runner flags: --log-level "loud": want error, info, debug or a verbosity >= 0`},
		{[]string{"extra"}, `runner flags: unexpected arguments ["extra"]`},
		{[]string{"--nope"}, "runner flags: flag provided but not defined: -nope"},
	} {
		if _, err := parseFlags(tc.args, io.Discard); err == nil || err.Error() != tc.want {
			t.Errorf("parseFlags(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestMainServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var logs strings.Builder
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--db-service-url", "http://127.0.0.1:1", "--work-dir", t.TempDir(), "--log-level", "error"},
			Config{SelfExecutable: "/bin/true"}, &syncWriter{b: &logs}, ready)
	}()
	addr := <-ready
	c, err := client.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := c.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	hc, err := c.HealthCheck(wctx, &runnerpb.HealthCheckRequest{})
	if err != nil || hc.GetStatus() != "degraded" || hc.GetVersion() != "dev" {
		t.Fatalf("health: %+v %v", hc, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-toolexec")
	if err := run(context.Background(), []string{"--listen", "127.0.0.1:0", "--tool-launcher", missing}, Config{}, io.Discard, nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("--tool-launcher %s: %v, want an error naming it", missing, err)
	}
	if err := run(context.Background(), []string{"--listen", "256.0.0.1:1"}, Config{}, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "runner: listen on 256.0.0.1:1") {
		t.Fatalf("bad listen address: %v", err)
	}
}

type syncWriter struct {
	b interface{ Write([]byte) (int, error) }
}

func (w *syncWriter) Write(p []byte) (int, error) { return w.b.Write(p) }

// --environment-token-env: the runner reads the exec agent's token from the
// variable it names and unsets it; a terminal task's registration then
// dials the agent instead of refusing for want of a token.
func TestEnvironmentTokenEnv(t *testing.T) {
	const name = "TOLOKAFORGE_TEST_ENV_TOKEN"
	spec := func(id string) string {
		return `{"trial_id":"` + id + `","run_id":"r","attempt_id":"a","agent":{"provider":"oracle"},` +
			`"env_endpoints":{"environment_url":"127.0.0.1:1"},"task":{` +
			`"task_id":"term","name":"t","category":"terminal","description":"d","adapter_type":"terminal_bench","system_prompt":"s",` +
			`"agent_tools":[{"name":"bash","description":"b"}],"user_tools":[],"tool_artifacts":{"tests/test.sh":"dHJ1ZQo="},` +
			`"environment":{"image":"example.com/t:1","agent":{},"verifier":{"tests":["tests"]}},` +
			`"grading":{"grading_method":"test_execution","test_execution":{"command":["bash","/tests/test.sh"]}}}}`
	}
	for _, tc := range []struct {
		name  string
		token string
		file  string // --environment-token-file's content, when set
		want  string
	}{
		{"no token", "", "", "no token for its exec agent (--environment-token-env)"},
		{"token read", "s3cret", "", "did not become ready"},
		{"token file", "", "s3cret\n", "did not become ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(name, tc.token)
			args := []string{"--listen", "127.0.0.1:0", "--db-service-url", "http://127.0.0.1:1", "--work-dir", t.TempDir(), "--log-level", "error", "--environment-token-env", name}
			if tc.file != "" {
				f := filepath.Join(t.TempDir(), "environment-token")
				if err := os.WriteFile(f, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--environment-token-file", f)
			}
			ctx, cancel := context.WithCancel(context.Background())
			ready := make(chan string, 1)
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, args, Config{SelfExecutable: "/bin/true"}, io.Discard, ready)
			}()
			addr := <-ready
			if v, ok := os.LookupEnv(name); ok {
				t.Errorf("%s is still set (%q)", name, v)
			}
			c, err := client.Dial(context.Background(), addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// The runner gives up on the exec agent a second before this
			// deadline, so its refusal arrives even on a loaded machine.
			rctx, rcancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer rcancel()
			resp, err := c.RegisterTrial(rctx, &runnerpb.RegisterTrialRequest{TrialId: "x", TrialSpecJson: spec("x"), EngineProtocolVersion: 2})
			if err != nil || resp.GetSuccess() || !strings.Contains(resp.GetError(), tc.want) || strings.Contains(resp.GetError(), "s3cret") {
				t.Errorf("RegisterTrial: %v %v, want a refusal holding %q", resp, err, tc.want)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("run: %v", err)
			}
		})
	}
}
