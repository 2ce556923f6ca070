package runner_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice"
	dbclient "tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/client"
)

const runnerToken = "runner-attempt-credential-0123456789"

// authStack is a DB service and a runner that both require runnerToken,
// served on loopback, with clients presenting the right token, a wrong one
// and none.
type authStack struct {
	srv               *runner.Server
	db                *dbclient.Client
	good, wrong, none *client.Client
}

func startAuthStack(t *testing.T, dbToken string) *authStack {
	t.Helper()
	dbLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { _ = dbservice.New(dbservice.Options{AuthToken: runnerToken}).Serve(ctx, dbLn) })
	dbURL := "http://" + dbLn.Addr().String()
	srv, err := runner.New(runner.Config{DBServiceURL: dbURL, WorkDir: t.TempDir(), SelfExecutable: selfBin,
		AuthToken: runnerToken, DBAuthToken: dbToken, DrainTimeout: 2 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _ = srv.Serve(ctx, ln) })
	dial := func(opts ...client.Option) *client.Client {
		c, err := client.Dial(context.Background(), ln.Addr().String(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	s := &authStack{srv: srv, db: dbclient.New(dbURL, dbclient.WithToken(runnerToken)),
		good: dial(client.WithToken(runnerToken)), wrong: dial(client.WithToken("not-the-token")), none: dial()}
	// Health is open: the unauthenticated client can wait for readiness.
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := s.none.WaitReady(wctx); err != nil {
		t.Fatalf("grpc.health.v1 without a credential: %v", err)
	}
	return s
}

func wantUnauthenticated(t *testing.T, what string, err error) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != codes.Unauthenticated {
		t.Fatalf("%s: %v, want Unauthenticated", what, err)
	}
	if strings.Contains(st.Message(), runnerToken) || strings.Contains(st.Message(), "not-the-token") {
		t.Fatalf("%s: the refusal echoes a token: %q", what, st.Message())
	}
}

// A call without the trial's credential, or with another, is refused with
// Unauthenticated before any handler runs: nothing is registered, executed
// or cleaned up, and the DB's state, version and hash stay as they were.
func TestRunnerRefusesCallsWithoutTheCredential(t *testing.T) {
	s := startAuthStack(t, "")
	ctx := ctxT(t)
	taskDoc := baseTask([]any{tool("db_insert"), tool("db_get")}, nil, obj{"items": []any{obj{"id": "a", "n": 1}}})
	reg := &runnerpb.RegisterTrialRequest{TrialId: "tr", TrialSpecJson: specJSON(t, "tr", taskDoc), EngineProtocolVersion: task.EngineProtocolVersion}

	for name, c := range map[string]*client.Client{"no token": s.none, "wrong token": s.wrong} {
		_, err := c.RegisterTrial(ctx, reg)
		wantUnauthenticated(t, name+": RegisterTrial", err)
	}
	if n := s.srv.ActiveTrials(); n != 0 {
		t.Fatalf("refused RegisterTrial registered %d trials", n)
	}
	if _, err := s.db.Hash(ctx, "tr"); err == nil {
		t.Fatal("refused RegisterTrial initialised the DB")
	}

	// With the credential the runner registers and its DB client, which
	// presents the same token, initialises the DB.
	if resp, err := s.good.RegisterTrial(ctx, reg); err != nil || !resp.GetSuccess() {
		t.Fatalf("RegisterTrial with the credential: %v %s", err, resp.GetError())
	}
	before, err := s.db.Hash(ctx, "tr")
	if err != nil {
		t.Fatal(err)
	}
	insert := &runnerpb.ExecuteToolRequest{TrialId: "tr", ToolName: "db_insert", ArgumentsJson: `{"table":"items","record":{"id":"b"}}`, CallId: "c1"}
	for name, c := range map[string]*client.Client{"no token": s.none, "wrong token": s.wrong} {
		_, err := c.ExecuteTool(ctx, insert)
		wantUnauthenticated(t, name+": ExecuteTool", err)
		_, err = c.GetState(ctx, &runnerpb.GetStateRequest{TrialId: "tr"})
		wantUnauthenticated(t, name+": GetState", err)
		_, err = c.ResetTrial(ctx, &runnerpb.ResetTrialRequest{TrialId: "tr"})
		wantUnauthenticated(t, name+": ResetTrial", err)
		_, err = c.GradeTrial(ctx, &runnerpb.GradeTrialRequest{TrialId: "tr"})
		wantUnauthenticated(t, name+": GradeTrial", err)
		_, err = c.CleanupTrial(ctx, &runnerpb.CleanupTrialRequest{TrialId: "tr"})
		wantUnauthenticated(t, name+": CleanupTrial", err)
		_, err = c.HealthCheck(ctx, &runnerpb.HealthCheckRequest{})
		wantUnauthenticated(t, name+": RunnerService.HealthCheck", err)
		// The standard health service stays open for probes.
		if resp, err := c.Health().Check(ctx, &healthpb.HealthCheckRequest{Service: client.ServiceName}); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("%s: grpc.health.v1 = %v %v, want SERVING", name, resp, err)
		}
	}
	after, err := s.db.Hash(ctx, "tr")
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Fatalf("refused calls changed the DB: before %+v, after %+v", before, after)
	}
	if n := s.srv.ActiveTrials(); n != 1 {
		t.Fatalf("refused CleanupTrial: %d trials registered, want 1", n)
	}
	// The same call with the credential does what the refused ones did not.
	resp, err := s.good.ExecuteTool(ctx, insert)
	if err != nil || resp.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
		t.Fatalf("ExecuteTool with the credential: %v %v", resp, err)
	}
	if h, _ := s.db.Hash(ctx, "tr"); h == nil || h.Version <= before.Version {
		t.Fatalf("the authenticated insert did not reach the DB: %+v", h)
	}
}

// The runner's DB client presents its token: a runner holding another token
// than its DB service cannot register, and says the DB refused it.
func TestRunnerDBClientSendsTheToken(t *testing.T) {
	s := startAuthStack(t, "a-token-the-db-does-not-know")
	taskDoc := baseTask([]any{tool("db_get")}, nil, obj{"items": []any{obj{"id": "a"}}})
	resp, err := s.good.RegisterTrial(ctxT(t), &runnerpb.RegisterTrialRequest{TrialId: "tr", TrialSpecJson: specJSON(t, "tr", taskDoc), EngineProtocolVersion: task.EngineProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSuccess() || !strings.Contains(resp.GetError(), "401") {
		t.Fatalf("register against a DB with another token: success=%v error=%q, want a 401 refusal", resp.GetSuccess(), resp.GetError())
	}
	if strings.Contains(resp.GetError(), "a-token-the-db-does-not-know") {
		t.Fatalf("the error echoes the token: %q", resp.GetError())
	}
}

func TestRunnerAuthTokenFileFlag(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{filepath.Join(dir, "absent"), "absent"},
		{empty, "is empty"},
	} {
		err := runner.Main(context.Background(), []string{"--listen=127.0.0.1:0", "--work-dir=" + dir, "--auth-token-file=" + tc.file})
		if err == nil || !strings.Contains(err.Error(), "--auth-token-file") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--auth-token-file=%s: err = %v, want it to name the flag and say %q", tc.file, err, tc.want)
		}
	}
}
