package report

import (
	"fmt"
	"html/template"
	"io"
	"net/url"
	"path/filepath"
	"strings"
)

// Plot geometry of one pass^k-vs-k chart.
const (
	plotW, plotH                         = 360, 220
	padLeft, padRight, padTop, padBottom = 44, 16, 16, 36
	innerW, innerH                       = plotW - padLeft - padRight, plotH - padTop - padBottom
)

type htmlRow struct {
	Row
	PassAt1, PassHat, Cost string
	Failures               []reasonCount
	Links                  []trialLink
}

// trialLink is one trial of a cell, linked to its page when it has one.
type trialLink struct {
	Index       int
	Name, Phase string
	Page        template.URL
}

type htmlComponent struct {
	componentRate
	PassRate, MeanScore string
}

type htmlAgent struct {
	Agent                                       string
	Trials, Passes                              int32
	InfraFailed                                 int
	PassAt1, PassAtK, PassHatK, MeanScore, Cost string
	Tokens                                      int64
	Plot                                        template.HTML
}

type htmlFailing struct {
	Trial
	Score                          string
	GradeHref, TransHref, PageHref template.URL
}

type htmlData struct {
	Title   string
	K       int
	Rows    []htmlRow
	Agents  []htmlAgent
	Failing []htmlFailing
	// Components are the per-component pass rates.
	Components []htmlComponent
}

// WriteHTML writes a self-contained page: inline CSS, inline SVG, no script
// and no external asset. Links to grade and transcript files are relative
// to baseDir (the page's directory) when the files are below it.
func (r *Report) WriteHTML(w io.Writer, baseDir string) error {
	d := htmlData{Title: r.Title, K: r.K}
	costed := false
	for _, t := range r.Trials {
		costed = costed || t.Costed
	}
	links := map[string][]trialLink{}
	for _, t := range r.Trials {
		k := t.Task + "\x00" + t.Agent
		links[k] = append(links[k], trialLink{Index: t.Index, Name: t.Name, Phase: t.Phase, Page: template.URL(t.Page)})
	}
	for _, row := range r.Rows() {
		d.Rows = append(d.Rows, htmlRow{Row: row, PassAt1: fmtRate(row.PassAt1), PassHat: fmtRate(row.PassHat),
			Cost: fmtCost(row.CostUSD, costed), Failures: row.Failures, Links: links[row.Task+"\x00"+row.Agent]})
	}
	for _, c := range r.ComponentRates() {
		d.Components = append(d.Components, htmlComponent{componentRate: c, PassRate: fmtRate(c.PassRate), MeanScore: fmtRate(c.MeanScore)})
	}
	for _, a := range r.AgentSummaries() {
		s := a.Summary
		d.Agents = append(d.Agents, htmlAgent{
			Agent: a.Agent, Trials: s.Trials, Passes: s.Passes, InfraFailed: a.InfraFailed,
			PassAt1: fmtRate(s.PassAt1), PassAtK: fmtRate(s.PassAtK), PassHatK: fmtRate(s.PassHatK),
			MeanScore: fmtRate(s.MeanScore), Cost: fmtCost(s.CostUSD, costed), Tokens: s.Tokens,
			Plot: plot(a.Agent, a.Curve),
		})
	}
	for _, t := range r.Failing() {
		f := htmlFailing{Trial: t, Score: fmtRate(t.Score), GradeHref: href(baseDir, t.GradeFile), TransHref: href(baseDir, t.TranscriptFile),
			PageHref: template.URL(t.Page)}
		d.Failing = append(d.Failing, f)
	}
	return page.Execute(w, d)
}

// href links a file: relative to baseDir when below it, else a file:// URL.
// The URL is built from the path by net/url (relHref), so it is safe to
// trust (the template would otherwise refuse the file scheme).
func href(baseDir, file string) template.URL {
	if file == "" {
		return ""
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return ""
	}
	if baseDir != "" {
		if base, err := filepath.Abs(baseDir); err == nil {
			if rel, err := filepath.Rel(base, abs); err == nil {
				if h, ok := relHref(filepath.ToSlash(rel)); ok {
					return h
				}
			}
		}
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	return template.URL(u.String())
}

// relHref is the link to rel, a slash-separated path below the page's
// directory, as a relative URL whose path is rel: every segment
// percent-escaped (a "#", "?", "%" or space in a folder name stays part of
// the path), and "./" in front when the first segment holds a ":", which a
// browser would otherwise read as a scheme (a folder named
// "javascript:alert(1)" must not become a javascript: link). A path that is
// not below the directory (absolute, "..", empty segments) has no relative
// link: false.
func relHref(rel string) (template.URL, bool) {
	if rel == "" || strings.HasPrefix(rel, "/") {
		return "", false
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", false
		}
	}
	esc := (&url.URL{Path: rel}).EscapedPath()
	if first, _, _ := strings.Cut(esc, "/"); strings.Contains(first, ":") {
		esc = "./" + esc
	}
	return template.URL(esc), true
}

// plot draws pass^j against j as an inline SVG: axes, gridlines, the
// polyline through the defined points and one circle per point.
func plot(agent string, curve []*float64) template.HTML {
	k := len(curve)
	x := func(j int) float64 {
		if k <= 1 {
			return padLeft + innerW/2
		}
		return padLeft + float64(j-1)*innerW/float64(k-1)
	}
	y := func(v float64) float64 { return padTop + (1-v)*innerH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="passk-plot" data-agent="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="pass^k against k for %s">`,
		template.HTMLEscapeString(agent), plotW, plotH, plotW, plotH, template.HTMLEscapeString(agent))
	fmt.Fprintf(&b, `<title>pass^k vs k: %s</title>`, template.HTMLEscapeString(agent))
	for _, g := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, padLeft, y(g), plotW-padRight, y(g))
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%.2f</text>`, padLeft-6, y(g)+4, g)
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padLeft, padTop+innerH, plotW-padRight, padTop+innerH)
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padLeft, padTop, padLeft, padTop+innerH)
	step := max(1, k/10)
	for j := 1; j <= k; j += step {
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%d</text>`, x(j), padTop+innerH+16, j)
	}
	fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="middle">k</text>`, padLeft+innerW/2, plotH-4)
	var pts []string
	for j, v := range curve {
		if v != nil {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(j+1), y(*v)))
		}
	}
	if len(pts) > 1 {
		fmt.Fprintf(&b, `<polyline class="curve" points="%s"/>`, strings.Join(pts, " "))
	}
	for j, v := range curve {
		if v == nil {
			continue
		}
		fmt.Fprintf(&b, `<circle class="point" data-k="%d" data-value="%.6f" cx="%.1f" cy="%.1f" r="3.5"><title>pass^%d = %.4f</title></circle>`,
			j+1, *v, x(j+1), y(*v), j+1, *v)
	}
	if len(pts) == 0 {
		fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="middle">no task has k measured trials</text>`, padLeft+innerW/2, padTop+innerH/2)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every interpolated string above is escaped
}

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem;color:#1d2330;background:#fff}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0}
th,td{border:1px solid #d5d9e0;padding:.3rem .6rem;text-align:left;vertical-align:top}
th{background:#f1f3f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
.plots{display:flex;flex-wrap:wrap;gap:1.5rem}
figure{margin:0}figcaption{font-weight:600;margin-bottom:.3rem}
svg .grid{stroke:#e3e6ec;stroke-width:1}svg .axis{stroke:#5b6475;stroke-width:1}
svg .tick,svg .label{font-size:11px;fill:#5b6475}
svg .curve{fill:none;stroke:#2f6fde;stroke-width:2}svg .point{fill:#2f6fde}
.phase-Failed,.phase-GradingFailed{color:#b3261e}.phase-Passed{color:#1e7b34}.phase-InfraFailed{color:#8a5a00}.phase-Invalid,.phase-ProtocolSkew{color:#6b4fa3}
.note{color:#5b6475;font-size:.9rem}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="note">k = {{.K}}. n counts measured trials (Passed, Failed, GradingFailed); infrastructure failures (the Infra column) and invalid tasks are left out of n and of every rate, and every trial counts once however often it was retried. pass@k = 1 − C(n−c,k)/C(n,k); pass^k = C(c,k)/C(n,k). Each trial number links to the trial's page.</p>

<h2>Tasks × agents</h2>
<table id="cells">
<thead><tr><th>Task</th><th>Agent</th><th>Trials</th><th>n</th><th>Infra failed</th><th>Passes</th><th>pass@1</th>{{if ne .K 1}}<th>pass^{{.K}}</th>{{end}}<th>Cost</th><th>Trial pages</th><th>Top failure reasons</th></tr></thead>
<tbody>
{{range .Rows}}<tr class="cell" data-task="{{.Task}}" data-agent="{{.Agent}}"><td>{{.Task}}</td><td>{{.Agent}}</td><td class="num">{{.Trials}}</td><td class="num">{{.N}}</td><td class="num infra">{{.InfraFailed}}</td><td class="num">{{.C}}</td><td class="num">{{.PassAt1}}</td>{{if ne $.K 1}}<td class="num">{{.PassHat}}</td>{{end}}<td class="num">{{.Cost}}</td><td class="trials">{{range .Links}}{{if .Page}}<a class="trial-link phase-{{.Phase}}" data-phase="{{.Phase}}" data-trial="{{.Name}}" title="{{.Name}}: {{.Phase}}" href="{{.Page}}">#{{.Index}}</a> {{else}}<span class="trial-nolink phase-{{.Phase}}" data-phase="{{.Phase}}" title="{{.Name}}: {{.Phase}}">#{{.Index}}</span> {{end}}{{end}}</td><td>{{range $i, $f := .Failures}}{{if $i}}<br>{{end}}{{$f.Reason}} ×{{$f.Count}}{{else}}–{{end}}</td></tr>
{{end}}</tbody>
</table>

<h2>Agents</h2>
<table id="agents">
<thead><tr><th>Agent</th><th>n</th><th>Infra failed</th><th>Passes</th><th>pass@1</th>{{if ne .K 1}}<th>pass@{{.K}}</th><th>pass^{{.K}}</th>{{end}}<th>Mean score</th><th>Tokens</th><th>Cost</th></tr></thead>
<tbody>
{{range .Agents}}<tr class="agent" data-agent="{{.Agent}}"><td>{{.Agent}}</td><td class="num">{{.Trials}}</td><td class="num infra">{{.InfraFailed}}</td><td class="num">{{.Passes}}</td><td class="num">{{.PassAt1}}</td>{{if ne $.K 1}}<td class="num">{{.PassAtK}}</td><td class="num">{{.PassHatK}}</td>{{end}}<td class="num">{{.MeanScore}}</td><td class="num">{{.Tokens}}</td><td class="num">{{.Cost}}</td></tr>
{{end}}</tbody>
</table>

<h2>Grading components</h2>
{{if .Components}}<p class="note">Per agent, how often each grading component gave full marks, over the trials whose grade evaluated it (JSONPath and test execution are read from their reasons; a judge that errored counts as evaluated, not passed).</p>
<table id="components">
<thead><tr><th>Agent</th><th>Component</th><th>Evaluated</th><th>Passed</th><th>Errored</th><th>Pass rate</th><th>Mean score</th></tr></thead>
<tbody>
{{range .Components}}<tr class="component" data-agent="{{.Agent}}" data-component="{{.Component}}"><td>{{.Agent}}</td><td>{{.Component}}</td><td class="num">{{.Evaluated}}</td><td class="num">{{.Passed}}</td><td class="num">{{.Errored}}</td><td class="num">{{.PassRate}}</td><td class="num">{{.MeanScore}}</td></tr>
{{end}}</tbody>
</table>{{else}}<p class="note">No grade records per-component results.</p>{{end}}

<h2>pass^k against k</h2>
<p class="note">Each curve averages over the task × agent cells with at least {{.K}} measured trials, so every point covers the same cells.</p>
<div class="plots">
{{range .Agents}}<figure><figcaption>{{.Agent}}</figcaption>{{.Plot}}</figure>
{{end}}</div>

<h2>Trials that did not pass</h2>
{{if .Failing}}<table id="failing">
<thead><tr><th>Trial</th><th>Task</th><th>Agent</th><th>Phase</th><th>Score</th><th>Reason</th><th>Files</th></tr></thead>
<tbody>
{{range .Failing}}<tr class="failing"><td>{{.Name}}</td><td>{{.Task}}</td><td>{{.Agent}}</td><td class="phase-{{.Phase}}">{{.Phase}}</td><td class="num">{{.Score}}</td><td>{{.Reason}}</td><td>{{if .PageHref}}<a class="trial-page" href="{{.PageHref}}">trial page</a> {{end}}{{if .GradeHref}}<a class="grade" href="{{.GradeHref}}">grade</a>{{end}} {{if .TransHref}}<a class="transcript" href="{{.TransHref}}">transcript</a>{{end}}</td></tr>
{{end}}</tbody>
</table>{{else}}<p>Every trial passed.</p>{{end}}
</body>
</html>
`))
