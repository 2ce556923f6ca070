package local_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/task/pack"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/runner/tools/builtin"
)

// tauRetail is the project's tau-bench retail-shaped fixture (examples/taubench_retail).
var tauRetail = filepath.Join("..", "..", "examples", "taubench_retail")

// TestTauBenchRetailProject: `pack validate` of the tau-bench retail-shaped project,
// --strict: every task imports unchanged (users keyed by user id without a user-id
// field, tools as get_info() classes behind a registry script, no tools.json) and the
// oracle's run grades 1.0, JSONPath by key and the refusal task included.
func TestTauBenchRetailProject(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Fatalf("needs Debian's /usr/bin/python3 (make python-deps): %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := local.StartStack(ctx, local.StackConfig{SelfExecutable: exe, WorkDir: t.TempDir(), Python: "/usr/bin/python3"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	for _, id := range []string{"cancel_pending_order", "move_user_address", "refuse_refund_without_order"} {
		t.Run(id, func(t *testing.T) {
			v := local.ValidatePack(ctx, s, filepath.Join(tauRetail, "tasks", id), pack.Options{Builtins: builtin.Catalog{}}, local.OracleRun{}, true, io.Discard)
			if !v.Pass || v.Score != 1 || v.StateScore == nil || *v.StateScore != 1 {
				t.Fatalf("verdict %+v", v)
			}
		})
	}
}

// TestTauBenchRetailSchemasFromTheTools: the project ships no fixtures/tools.json,
// so `trial run`'s import (LoadPack) reads every tool's schema from its get_info(),
// once, and reports no fallback.
func TestTauBenchRetailSchemasFromTheTools(t *testing.T) {
	lt, diags, err := local.LoadPack(filepath.Join(tauRetail, "tasks", "cancel_pending_order"), pack.Options{Builtins: builtin.Catalog{}, Describe: local.Describer("/usr/bin/python3")})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diags {
		if strings.Contains(d.String(), "fallback schema") {
			t.Fatalf("a tool was offered the fallback schema: %s", d)
		}
	}
	want := map[string]string{
		"get_user_details":     `{"type":"object","properties":{"user_id":{"type":"string","description":"The user id, such as 'noah_brown_6181'."}},"required":["user_id"]}`,
		"cancel_pending_order": `{"type":"object","properties":{"order_id":{"type":"string","description":"The order id, such as '#W0000000'."},"reason":{"type":"string","enum":["no longer needed","ordered by mistake"],"description":"Why the order is cancelled."}},"required":["order_id","reason"]}`,
	}
	seen := 0
	for _, tool := range lt.Task.AgentTools {
		if tool.Description == "Agent tool: "+tool.Name {
			t.Errorf("%s kept the fallback description", tool.Name)
		}
		if w, ok := want[tool.Name]; ok {
			seen++
			if string(tool.Parameters) != w {
				t.Errorf("%s parameters\n got %s\nwant %s", tool.Name, tool.Parameters, w)
			}
		}
	}
	if seen != len(want) || len(lt.Task.AgentTools) != 5 {
		t.Fatalf("agent tools %d, described %d", len(lt.Task.AgentTools), seen)
	}
}

func packOpts() pack.Options {
	return pack.Options{Builtins: builtin.Catalog{}, Describe: local.Describer("/usr/bin/python3")}
}
