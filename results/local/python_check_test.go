package local_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tolokaforge.io/operator/results/local"
)

var foodDelivery = filepath.Join("..", "..", "api", "task", "pack", "testdata", "tolokaforge", "projects", "food_delivery_2", "tasks")

// TestCheckPythonBeforeTheRun: pack validate's stack refuses, before the oracle
// runs, a task whose Python imports a module its interpreter lacks, naming the
// module, make python-deps and --python (never pip); Debian's python3, which make
// python-deps provisions, passes food_delivery_2's tasks (its checks.py imports the
// runner's own tolokaforge shim, which is not the pack's to provide).
func TestCheckPythonBeforeTheRun(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(bare, []byte("#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{"order_six_items_golden", "order_modify_with_checks"} {
		lt, _, err := local.LoadPack(filepath.Join(foodDelivery, id), packOpts())
		if err != nil {
			t.Fatal(err)
		}
		if err := (&local.Stack{Python: "/usr/bin/python3"}).CheckPython(ctx, lt.Task); err != nil {
			t.Fatalf("%s with Debian's python3: %v", id, err)
		}
		err = (&local.Stack{Python: bare}).CheckPython(ctx, lt.Task)
		want := "the pack's Python tools import pydantic, which " + bare + " cannot import: run `make python-deps` " +
			"(Debian's /usr/bin/python3 with the modules the packs import) or name an interpreter that has them with --python"
		if err == nil || err.Error() != want {
			t.Fatalf("%s with a python3 lacking pydantic: %v\nwant %s", id, err, want)
		}
	}
}
