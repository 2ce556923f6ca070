package local_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
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
