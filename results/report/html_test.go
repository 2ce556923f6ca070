package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// dom is what the tests read from a page: elements by tag and class.
type dom struct{ root *html.Node }

func parseDOM(t *testing.T, b []byte) dom {
	t.Helper()
	n, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return dom{n}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

// find returns the elements named tag with class (any class when "").
func (d dom) find(tag, class string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag && (class == "" || hasClass(n, class)) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(d.root)
	return out
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// checkPage asserts what the sample's page shows, on our own HTML or on
// the DOM a browser built from it.
func checkPage(t *testing.T, d dom) {
	t.Helper()
	cells := d.find("tr", "cell")
	if len(cells) != 4 {
		t.Fatalf("%d task x agent rows, want 4", len(cells))
	}
	var got []string
	for _, r := range cells {
		var tds []string
		for _, td := range (dom{r}).find("td", "") {
			tds = append(tds, strings.TrimSpace(text(td)))
		}
		got = append(got, strings.Join(tds[:8], "|"))
	}
	// Task, agent, trials, n, infra failed, passes, pass@1, pass^2: the
	// infra-failed trial of llm t2 is its own count, out of n and pass@1.
	want := []string{
		"t1|llm|2|2|0|1|0.500|0.000",
		"t1|oracle|2|2|0|2|1.000|1.000",
		"t2|llm|2|1|1|0|0.000|-",
		"t2|oracle|2|2|0|2|1.000|1.000",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	agents := d.find("tr", "agent")
	if n := len(agents); n != 3 {
		t.Fatalf("%d agent rows, want 3 (llm, oracle, all)", n)
	}
	if infra := strings.TrimSpace(text(dom{agents[0]}.find("td", "infra")[0])); infra != "1" {
		t.Fatalf("llm's infra-failed count %q, want 1", infra)
	}
	// Every cell links to each of its trials' pages.
	var links []string
	for _, a := range d.find("a", "trial-link") {
		links = append(links, attr(a, "data-phase")+" "+attr(a, "href"))
	}
	wantLinks := []string{
		"Passed report_trials/llm__t1__0.html", "Failed report_trials/llm__t1__1.html",
		"Passed report_trials/oracle__t1__0.html", "Passed report_trials/oracle__t1__1.html",
		"InfraFailed report_trials/llm__t2__0.html", "Failed report_trials/llm__t2__1.html",
		"Passed report_trials/oracle__t2__0.html", "Passed report_trials/oracle__t2__1.html",
	}
	if strings.Join(links, "\n") != strings.Join(wantLinks, "\n") {
		t.Fatalf("trial links\n%s\nwant\n%s", strings.Join(links, "\n"), strings.Join(wantLinks, "\n"))
	}
	var comps []string
	for _, r := range d.find("tr", "component") {
		if attr(r, "data-agent") == "(all)" {
			var tds []string
			for _, td := range (dom{r}).find("td", "") {
				tds = append(tds, strings.TrimSpace(text(td)))
			}
			comps = append(comps, strings.Join(tds[1:], "|"))
		}
	}
	wantComps := []string{
		"state_checks|7|5|0|0.714|0.714", "jsonpath|7|5|0|0.714|0.959",
		"transcript_rules|7|5|0|0.714|0.857", "llm_judge|3|1|1|0.333|0.750",
	}
	if strings.Join(comps, "\n") != strings.Join(wantComps, "\n") {
		t.Fatalf("component rates (all)\n%s\nwant\n%s", strings.Join(comps, "\n"), strings.Join(wantComps, "\n"))
	}
	plots := d.find("svg", "passk-plot")
	if len(plots) != 3 {
		t.Fatalf("%d plots, want 3", len(plots))
	}
	for i, wantAgent := range []string{"llm", "oracle", "(all)"} {
		p := plots[i]
		if attr(p, "data-agent") != wantAgent {
			t.Fatalf("plot %d is %q", i, attr(p, "data-agent"))
		}
		pts := (dom{p}).find("circle", "point")
		lines := (dom{p}).find("polyline", "curve")
		if len(pts) != 2 || len(lines) != 1 {
			t.Fatalf("plot %s: %d points, %d curves", wantAgent, len(pts), len(lines))
		}
		// pass^1 and pass^2 of that agent.
		vals := attr(pts[0], "data-value") + "," + attr(pts[1], "data-value")
		// Over the cells with 2 measured trials: llm t1; oracle t1, t2; all three.
		wantVals := map[string]string{"llm": "0.500000,0.000000", "oracle": "1.000000,1.000000", "(all)": "0.833333,0.666667"}[wantAgent]
		if vals != wantVals {
			t.Fatalf("plot %s values %s, want %s", wantAgent, vals, wantVals)
		}
	}
	failing := d.find("tr", "failing")
	if len(failing) != 3 {
		t.Fatalf("%d failing trials, want 3", len(failing))
	}
	grades, transcripts := d.find("a", "grade"), d.find("a", "transcript")
	if len(grades) != 2 || len(transcripts) != 3 {
		t.Fatalf("%d grade links, %d transcript links", len(grades), len(transcripts))
	}
	if h := attr(grades[0], "href"); h != "llm/trials/t1/1/grade.yaml" {
		t.Fatalf("grade link %q", h)
	}
	if h := attr(transcripts[1], "href"); h != "llm/trials/t2/0/trajectory.yaml" {
		t.Fatalf("transcript link %q", h)
	}
	// Self-contained: nothing is fetched.
	for _, tag := range []string{"script", "link", "img", "iframe"} {
		if n := len(d.find(tag, "")); n != 0 {
			t.Fatalf("%d <%s> elements in a self-contained page", n, tag)
		}
	}
}

func samplePage(t *testing.T) (string, []byte) {
	t.Helper()
	dir := sample(t)
	rep, err := FromArtifacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.html")
	if err := rep.WriteSite(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

func TestHTMLStructure(t *testing.T) {
	_, page := samplePage(t)
	checkPage(t, parseDOM(t, page))
	if bytes.Contains(page, []byte("ZgotmplZ")) {
		t.Fatal("the template refused a value")
	}
}

// chromium finds Debian's Chromium, installing it when missing.
func chromium(t *testing.T) string {
	t.Helper()
	const bin = "/usr/bin/chromium"
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	out, err := exec.Command("apt-get", "install", "-y", "chromium").CombinedOutput()
	if _, serr := os.Stat(bin); serr == nil {
		return bin
	}
	msg := "headless Chromium is needed for the browser test and could not be installed " +
		"(apt-get install -y chromium): " + strings.TrimSpace(lastLine(string(out)))
	if err != nil {
		msg += ": " + err.Error()
	}
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestHTMLInChromium loads the page in headless Chromium and checks the DOM
// it built: the tables' rows and the plots' SVG elements.
func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	path, _ := samplePage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	if !bytes.Contains(stdout.Bytes(), []byte("<svg")) {
		t.Fatalf("chromium dumped no SVG:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	checkPage(t, parseDOM(t, stdout.Bytes()))
}
