package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func cellTexts(row dom) []string {
	var out []string
	for _, td := range row.find("td", "") {
		out = append(out, strings.TrimSpace(text(td)))
	}
	return out
}

// checkFailedTrialPage asserts what the failing llm t1/1 trial's page shows.
func checkFailedTrialPage(t *testing.T, d dom) {
	t.Helper()
	var comps []string
	for _, r := range d.find("tr", "component") {
		comps = append(comps, strings.Join(cellTexts(dom{r}), "|"))
	}
	want := []string{
		"state_checks|0.000|failed|State: hash mismatch",
		"jsonpath|0.857|failed|JSONPath: 6 of 7 checks passed; failed: stock (want 40, got 41)",
		"transcript_rules|0.500|failed|Transcript: 1 of 2 rules failed: create_order",
		"llm_judge|0.500|failed|–",
	}
	if strings.Join(comps, "\n") != strings.Join(want, "\n") {
		t.Fatalf("components\n%s\nwant\n%s", strings.Join(comps, "\n"), strings.Join(want, "\n"))
	}
	if c := d.find("tr", "criterion"); len(c) != 1 || strings.Join(cellTexts(dom{c[0]}), "|") != "polite|false|0.5|said <b>hello</b>" {
		t.Fatalf("criteria %d", len(c))
	}
	if r := d.find("tr", "trace-check"); len(r) != 1 || strings.Join(cellTexts(dom{r[0]}), "|") != "pay_after_order|precedes|scored|false|confirm_payment before <place_order>" {
		t.Fatalf("trace checks %d", len(r))
	}
	if r := d.find("tr", "custom-check"); len(r) != 1 || strings.Join(cellTexts(dom{r[0]}), "|") != "balance_ok|failed|0|balance 300 != 141.01" {
		t.Fatalf("custom checks %d", len(r))
	}
	sd := d.find("div", "state-diff")
	if len(sd) != 1 {
		t.Fatalf("%d state diffs", len(sd))
	}
	if s := text(dom{sd[0]}.find("p", "diff-summary")[0]); s != "State mismatch: orders: 0 missing, 0 extra, 1 different" {
		t.Fatalf("diff summary %q", s)
	}
	if s := text(dom{sd[0]}.find("pre", "diff-lines")[0]); s != "orders[O-001].status: expected \"paid\", actual \"pending\"\n" {
		t.Fatalf("diff lines %q", s)
	}
	msgs := d.find("div", "msg")
	var roles []string
	for _, m := range msgs {
		roles = append(roles, strings.TrimPrefix(strings.Fields(attr(m, "class"))[1], "role-"))
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,assistant" {
		t.Fatalf("roles %v", roles)
	}
	// The hostile strings are text, whole, and nothing became an element.
	if got := text(dom{msgs[3]}.find("pre", "content")[0]); got != scriptPayload {
		t.Fatalf("tool result %q", got)
	}
	if got := text(dom{msgs[1]}.find("pre", "content")[0]); got != "Buy me a <img src=x onerror=alert(1)> headset" {
		t.Fatalf("user message %q", got)
	}
	args := text(dom{msgs[2]}.find("pre", "tool-args")[0])
	if !strings.Contains(args, `"note": "\u003c/pre\u003e\u003cscript\u003e`) && !strings.Contains(args, `"note": "</pre><script>window.__pwned=2</script>"`) {
		t.Fatalf("tool arguments %q", args)
	}
	if n := text(dom{msgs[2]}.find("span", "tool-name")[0]); n != "→ place_order" {
		t.Fatalf("tool name %q", n)
	}
	if s := text(dom{msgs[3]}.find("span", "status")[0]); s != "[success, 0.250 s]" {
		t.Fatalf("tool status %q", s)
	}
	rec := d.find("tr", "tool-record")
	if len(rec) != 1 || text(dom{rec[0]}.find("pre", "tool-output")[0]) != scriptPayload {
		t.Fatalf("tool record %d", len(rec))
	}
	for _, tag := range []string{"script", "img", "link", "iframe"} {
		if n := len(d.find(tag, "")); n != 0 {
			t.Fatalf("%d <%s> elements: a transcript injected markup", n, tag)
		}
	}
	var timings []string
	for _, r := range d.find("table", "") {
		if attr(r, "id") == "timings" {
			for _, tr := range (dom{r}).find("tr", "") {
				if tds := cellTexts(dom{tr}); len(tds) == 2 {
					timings = append(timings, strings.Join(tds, "="))
				}
			}
		}
	}
	if strings.Join(timings, ",") != "total=1.000 s,registration=0.000 s,agent LLM=1.500 s,user LLM=0.000 s,tools=0.250 s,grading=0.100 s" {
		t.Fatalf("timings %v", timings)
	}
	var cost string
	for _, s := range d.find("span", "") {
		if attr(s, "id") == "cost" {
			cost = text(s)
		}
	}
	if cost != "$0.5000" {
		t.Fatalf("cost %q", cost)
	}
}

func TestTrialPage(t *testing.T) {
	path, _ := samplePage(t)
	pages := trialPagesDir(path)
	b, err := os.ReadFile(filepath.Join(pages, "llm__t1__1.html"))
	if err != nil {
		t.Fatal(err)
	}
	checkFailedTrialPage(t, parseDOM(t, b))
	if back := parseDOM(t, b).find("a", "back"); len(back) != 1 || attr(back[0], "href") != "../report.html" {
		t.Fatalf("back link %v", back)
	}
	if g := parseDOM(t, b).find("a", "grade"); len(g) != 1 || attr(g[0], "href") != "../llm/trials/t1/1/grade.yaml" {
		t.Fatalf("grade link %v", g)
	}
	// A trial without a grade says so; an infra-failed trial lists its attempt.
	b, err = os.ReadFile(filepath.Join(pages, "llm__t2__0.html"))
	if err != nil {
		t.Fatal(err)
	}
	d := parseDOM(t, b)
	if len(d.find("table", "")) == 0 || !strings.Contains(string(b), `id="no-grade"`) || !strings.Contains(string(b), "<td>PodLost</td>") {
		t.Fatalf("infra-failed trial page:\n%s", b)
	}
	// The retried trial lists both attempts.
	b, err = os.ReadFile(filepath.Join(pages, "oracle__t2__1.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<td>InfraFailed</td><td>PodLost</td>") || !strings.Contains(string(b), `<td class="num">2</td><td>Graded</td>`) {
		t.Fatalf("retried trial page lacks its attempts:\n%s", b)
	}
}

// TestTrialPageInChromium clicks, in headless Chromium, from the campaign
// table to the first failed trial, and finds its state diff and its hostile
// tool result shown as text (no script ran).
func TestTrialPageInChromium(t *testing.T) {
	bin := chromium(t)
	path, _ := samplePage(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first call starts the browser and must not carry a timeout (it
	// would bound the browser's life); the steps after it each do.
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatalf("chromium: open the campaign page: %v", err)
	}
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()

	failedLink := chromedp.CSS(`#cells a.trial-link[data-phase="Failed"]`)
	linkTrial, err := chromedp.Run(ctx, chromedp.AttributeValue(failedLink, "data-trial"))
	if err != nil {
		t.Fatalf("chromium: the first failed trial's link: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(failedLink), chromedp.WaitVisible(chromedp.CSS(`#state-diff .diff-summary`))); err != nil {
		t.Fatalf("chromium: click through to the trial's state diff: %v", err)
	}
	url, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	if linkTrial.Value != "llm/trials/t1/1" || !strings.HasSuffix(url, "/report_trials/llm__t1__1.html") || title != "llm/trials/t1/1" {
		t.Fatalf("clicked %q, landed on %q titled %q", linkTrial.Value, url, title)
	}
	summary, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#state-diff .diff-summary`)))
	if err != nil || summary != "State mismatch: orders: 0 missing, 0 extra, 1 different" {
		t.Fatalf("state diff summary %q, %v", summary, err)
	}
	toolOutput, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`#tool-calls .tool-output`)))
	if err != nil || toolOutput != scriptPayload {
		t.Fatalf("tool output %q, %v", toolOutput, err)
	}
	scripts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("script").length`))
	if err != nil || scripts != 0 {
		t.Fatalf("%d script elements, %v", scripts, err)
	}
	ran, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__pwned !== undefined`))
	if err != nil || ran {
		t.Fatalf("a transcript's script ran: %v, %v", ran, err)
	}
	// The DOM Chromium built holds what our own parse of the page does.
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		t.Fatal(err)
	}
	checkFailedTrialPage(t, parseDOM(t, []byte(html)))
}

// In the manager's layout (<ns>/<trial>/attempt-<n>/trials/...) the trial
// page lists every attempt-<n> root's attempt.
func TestTrialPageManagerLayout(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "ns", "trial-a")
	writeAttempt(t, attempt{root: filepath.Join(root, "attempt-1"), task: "t1", index: 0, n: 1, outcome: "InfraFailed", reason: "PodLost"})
	writeAttempt(t, attempt{root: filepath.Join(root, "attempt-2"), task: "t1", index: 0, n: 2, outcome: "Graded", pass: true, score: 1, turns: 2})
	rep, err := FromArtifacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.html")
	if err := rep.WriteSite(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(trialPagesDir(path), "ns_trial-a__t1__0.html"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, tb := range parseDOM(t, b).find("table", "") {
		if attr(tb, "id") == "attempts" {
			for _, tr := range (dom{tb}).find("tr", "") {
				if tds := cellTexts(dom{tr}); len(tds) > 0 {
					rows = append(rows, strings.Join(tds[:3], "|"))
				}
			}
		}
	}
	if strings.Join(rows, ",") != "1|InfraFailed|PodLost,2|Graded|" {
		t.Fatalf("attempts %v", rows)
	}
}
