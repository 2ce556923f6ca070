package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The report command reads what `trial run` wrote: the artifacts layout is
// the contract between them.
func TestReportCommandOnTrialRunArtifacts(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := runTrial(ctxT(t), []string{"run", "--task", shopTaskPath, "--out", dir}, trialTestEnv(t, &out)); err != nil {
		t.Fatalf("trial run: %v\n%s", err, out.String())
	}
	htmlPath := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	if err := runReport(context.Background(), []string{"--artifacts", dir, "--html", htmlPath, "--k", "1"}, &stdout, &stderr, nil); err != nil {
		t.Fatalf("report: %v\n%s", err, stderr.String())
	}
	// --k 1 applied, and at k=1 the one rate is printed once per table.
	if got := stdout.String(); !strings.Contains(got, "(k=1;") || strings.Contains(got, "PASS^1") ||
		strings.Count(got, "PASS@1") != 2 || !strings.Contains(got, "shop_orders_02") {
		t.Fatalf("table:\n%s", got)
	}
	for _, f := range []string{htmlPath, filepath.Join(filepath.Dir(htmlPath), "aggregate.json")} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "report: name a campaign or pass --artifacts DIR"},
		{[]string{"a", "b"}, `report: one campaign at a time, got ["a" "b"]`},
		{[]string{"camp", "--artifacts", dir}, "give a campaign name or --artifacts, not both"},
		{[]string{"--artifacts", dir, "--k", "-1"}, "--k must be >= 1"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
	} {
		err := runReport(context.Background(), tc.args, &stdout, &stderr, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
