package cli

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
	dir = onlyRun(t, dir)
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
	// One page per trial beside the campaign page, linked from its cell; the
	// agent is the one trajectory.yaml records (oracle), not a folder name.
	page, err := os.ReadFile(filepath.Join(filepath.Dir(htmlPath), "report_trials", "oracle__shop_orders_02__0.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<span class="tool-name">→ place_order</span>`, `<span class="tool-name">→ confirm_payment</span>`,
		`<tr class="component" data-component="state_checks"><td>state_checks</td><td class="num">1.000</td><td class="verdict-passed">passed</td><td>State: hash match</td></tr>`,
		`<tr class="component" data-component="jsonpath"><td>jsonpath</td><td class="num">1.000</td><td class="verdict-passed">passed</td><td>JSONPath: all 7 checks passed</td></tr>`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("trial page lacks %q", want)
		}
	}
	campaignPage, _ := os.ReadFile(htmlPath)
	if !strings.Contains(string(campaignPage), `href="report_trials/oracle__shop_orders_02__0.html">#0</a>`) {
		t.Errorf("the campaign page does not link the trial:\n%s", campaignPage)
	}
	// k=1 on the page too: one pass@1 column per table, no pass^1 or pass@k beside it.
	if c := string(campaignPage); strings.Count(c, "<th>pass@1</th>") != 2 || strings.Contains(c, "<th>pass^1</th>") {
		t.Errorf("k=1 headers on the page:\n%s", c)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "report: name a campaign or pass --artifacts DIR"},
		{[]string{"a", "b"}, `report: one campaign at a time, got ["a" "b"]`},
		{[]string{"camp", "--artifacts", dir}, "give a campaign name or --artifacts, not both"},
		{[]string{"--artifacts", dir, "--k", "-1"}, "--k must be >= 1"},
		{[]string{"--bogus"}, "report: unknown flag: --bogus"},
	} {
		err := runReport(context.Background(), tc.args, &stdout, &stderr, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
