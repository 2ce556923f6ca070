package host_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"tolokaforge.io/operator/api/packfiles"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/api/task/pack"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/runner/tools/builtin"
)

// BenchmarkPythonPackStartup is the start-up a Python pack adds to a trial,
// against a Go-only task, in one run on one runner: per iteration, the
// Python side verifies and unpacks food_delivery_2's files bundle (what the
// manager does with spec.files after its ConfigMap GET, which is not
// counted), registers the trial (the runner writes the files out) and makes
// its first tool call (the runner starts the pack's Python MCP server); the
// Go side registers the builtin-calculator task and makes its first call.
//
//	py-ms/start   verify + unpack + RegisterTrial + first Python tool call
//	go-ms/start   RegisterTrial + first builtin tool call
//	added-ms      their difference
//	verify-ms     the bundle's verify + unpack alone
func BenchmarkPythonPackStartup(b *testing.B) {
	s := startStack(b, local.StackConfig{Python: "/usr/bin/python3"})
	dir := filepath.Join("..", "..", "api", "task", "pack", "testdata", "tolokaforge", "projects", "food_delivery_2", "tasks", "order_six_items_golden")
	c, err := pack.Convert(dir, pack.Options{Builtins: builtin.Catalog{}})
	if err != nil {
		b.Fatal(err)
	}
	files := map[string][]byte{}
	for p, v := range c.Description.ToolArtifacts {
		if files[p], err = base64.StdEncoding.DecodeString(v); err != nil {
			b.Fatal(err)
		}
	}
	bundle, err := packfiles.Build(files)
	if err != nil {
		b.Fatal(err)
	}
	ref := packfiles.Ref{Digest: packfiles.Digest(bundle), Size: int64(len(bundle))}
	py := *c.Description
	goTask := calcTask(b)
	ctx := context.Background()

	// start returns the time from since to the first tool call's answer;
	// the cleanup after it is not counted.
	start := func(since time.Time, td *task.TaskDescription, tool, args string) time.Duration {
		spec := specFor(s, td, nil)
		js, err := json.Marshal(spec)
		if err != nil {
			b.Fatal(err)
		}
		if r, err := s.Runner.RegisterTrial(ctx, &runnerpb.RegisterTrialRequest{TrialId: spec.TrialID, TrialSpecJson: string(js),
			EngineProtocolVersion: task.EngineProtocolVersion}); err != nil || !r.GetSuccess() {
			b.Fatalf("register %s: %v %v", td.TaskID, r, err)
		}
		if r, err := s.Runner.ExecuteTool(ctx, &runnerpb.ExecuteToolRequest{TrialId: spec.TrialID, ToolName: tool,
			ArgumentsJson: args, CallId: "c1"}); err != nil || r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
			b.Fatalf("%s: %v %v", tool, r, err)
		}
		took := time.Since(since)
		if _, err := s.Runner.CleanupTrial(ctx, &runnerpb.CleanupTrialRequest{TrialId: spec.TrialID}); err != nil {
			b.Fatal(err)
		}
		return took
	}

	var pyNs, goNs, verifyNs time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		got, err := packfiles.Open(bundle, ref, "bench")
		if err != nil {
			b.Fatal(err)
		}
		arts := make(map[string]string, len(got))
		for p, v := range got {
			arts[p] = base64.StdEncoding.EncodeToString(v)
		}
		verifyNs += time.Since(t0)
		td := py
		td.ToolArtifacts = arts
		pyNs += start(t0, &td, "get_user_details", `{"user_id":"user_9515"}`)
		goNs += start(time.Now(), goTask, "calculator", `{"expression":"1+1"}`)
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 / n }
	b.ReportMetric(ms(pyNs), "py-ms/start")
	b.ReportMetric(ms(goNs), "go-ms/start")
	b.ReportMetric(ms(pyNs-goNs), "added-ms")
	b.ReportMetric(ms(verifyNs), "verify-ms")
	b.ReportMetric(0, "ns/op")
}
