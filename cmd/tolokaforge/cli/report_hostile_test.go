package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/artifacts/blobstore"
)

// `report --artifacts file://STORE` and `report --artifacts DIR` refuse a
// link out of the store, naming it; /etc/passwd never reaches the output.
func TestReportRefusesLinksOutOfTheStore(t *testing.T) {
	store := t.TempDir()
	trial := filepath.Join(store, "ns", "t", "attempt-1", "trials", "x", "0")
	if err := os.MkdirAll(trial, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(trial, "trajectory.yaml"), []byte("task_id: x\noutcome: Failed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(trial, "grade.yaml")); err != nil {
		t.Fatal(err)
	}
	u, err := blobstore.FileURL(store)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{u, store} {
		var stdout, stderr bytes.Buffer
		err := runReport(context.Background(), []string{"--artifacts", src}, &stdout, &stderr, nil)
		want := "ns/t/attempt-1/trials/x/0/grade.yaml is a symbolic link to /etc/passwd, an absolute path (links must be relative and stay inside " + store + "); refused"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("report --artifacts %s: %v\nwant it to contain %q", src, err, want)
		}
		if strings.Contains(stdout.String()+stderr.String(), "root:") {
			t.Fatalf("/etc/passwd reached the output")
		}
	}
}
