package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/result"
	"tolokaforge.io/operator/api/task"
)

// The full trajectory.yaml, for the trial page (api/artifacts).
type fullTrajectory struct {
	trajectoryDoc
	GradingError string         `json:"grading_error"`
	StartTime    time.Time      `json:"start_time"`
	EndTime      time.Time      `json:"end_time"`
	Messages     []messageDoc   `json:"messages"`
	ToolCalls    []recordedCall `json:"tool_calls"`
	RunID        string         `json:"run_id"`
}

type messageDoc struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string    `json:"tool_call_id"`
	Timestamp  time.Time `json:"timestamp"`
}

type recordedCall struct {
	CallID         string          `json:"call_id"`
	Sequence       int             `json:"sequence"`
	ToolName       string          `json:"tool_name"`
	Arguments      json.RawMessage `json:"arguments"`
	Executor       string          `json:"executor"`
	Status         string          `json:"status"`
	Output         string          `json:"output"`
	LatencySeconds float64         `json:"latency_seconds"`
}

type pageCall struct {
	ID, Name, Args string
}

type pageMessage struct {
	Role, Content, Time string
	Calls               []pageCall
	// ToolCallID, Status and Latency describe a tool result.
	ToolCallID, Status, Latency string
}

type pageRecord struct {
	Sequence                                              int
	CallID, Executor, Tool, Args, Status, Output, Latency string
}

type pageComponent struct {
	Name, Score, Verdict string
	Reasons              []string
}

type pageGrade struct {
	Pass                bool
	Score, GradedBy     string
	Components          []pageComponent
	Notes               []string
	DiffSummary         string
	DiffLines           []string
	DiffJSON            string
	JudgeStatus         string
	Criteria            []criterionDoc
	Custom              []customCheckDoc
	Trace               []traceCheckDoc
	TraceSummary        *traceSummaryDoc
	HasDiff, HasAnyDiff bool
}

type pageUsage struct {
	Actor                                       string
	Calls, Prompt, Completion, Reasoning, Total int64
	Cost                                        string
}

type pageAttempt struct {
	N                                     int
	Outcome, Reason, Termination, Message string
}

type pageTiming struct{ Name, Seconds string }

type trialPageData struct {
	Trial                                    Trial
	Back                                     template.URL
	Score, Cost, Start, End, RunID           string
	Outcome, OutcomeReason, Message, Grading string
	Messages                                 []pageMessage
	Records                                  []pageRecord
	Grade                                    *pageGrade
	Usage                                    []pageUsage
	Timings                                  []pageTiming
	Attempts                                 []pageAttempt
	GradeHref, TransHref                     template.URL
}

func prettyJSON(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(raw), "", "  "); err != nil {
		return raw
	}
	return b.String()
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

func fmtSeconds(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) + " s" }

// trialPage reads a trial's directory into the page's data. The page sits
// one directory below campaignDir: files below campaignDir are linked
// relative to it, so the whole tree can move.
func trialPage(t Trial, back template.URL, campaignDir string) (*trialPageData, error) {
	up := func(h template.URL) template.URL {
		if h == "" || strings.HasPrefix(string(h), "file:") {
			return h
		}
		return "../" + h
	}
	d := &trialPageData{Trial: t, Back: back, Score: fmtRate(t.Score), Cost: fmtCost(t.CostUSD, t.Costed),
		GradeHref: up(href(campaignDir, t.GradeFile)), TransHref: up(href(campaignDir, t.TranscriptFile))}
	var tr fullTrajectory
	root := t.readRoot()
	if _, err := readYAML(root, filepath.Join(t.Dir, trajectoryFile), &tr); err != nil {
		return nil, err
	}
	d.Start, d.End, d.RunID = fmtTime(tr.StartTime), fmtTime(tr.EndTime), tr.RunID
	d.Outcome, d.OutcomeReason, d.Message, d.Grading = tr.Outcome, tr.Reason, tr.Message, tr.GradingError

	records := map[string]recordedCall{}
	for _, c := range tr.ToolCalls {
		records[c.CallID] = c
		d.Records = append(d.Records, pageRecord{Sequence: c.Sequence, CallID: c.CallID, Executor: c.Executor, Tool: c.ToolName,
			Args: prettyJSON(string(c.Arguments)), Status: c.Status, Output: c.Output, Latency: fmtSeconds(c.LatencySeconds)})
	}
	for _, m := range tr.Messages {
		pm := pageMessage{Role: m.Role, Content: m.Content, Time: fmtTime(m.Timestamp), ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			pm.Calls = append(pm.Calls, pageCall{ID: c.ID, Name: c.Function.Name, Args: prettyJSON(c.Function.Arguments)})
		}
		if rc, ok := records[m.ToolCallID]; ok && m.ToolCallID != "" {
			pm.Status, pm.Latency = rc.Status, fmtSeconds(rc.LatencySeconds)
		}
		d.Messages = append(d.Messages, pm)
	}

	gf, gd, err := readGrade(root, filepath.Join(t.Dir, gradeFile))
	if err != nil {
		return nil, err
	}
	if gf != nil {
		if d.Grade, err = gradeOf(gf, gd); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(t.Dir, gradeFile), err)
		}
	}

	var m artifacts.Metrics
	if _, err := readYAML(root, filepath.Join(t.Dir, metricsFile), &m); err != nil {
		return nil, err
	}
	for _, u := range []struct {
		actor string
		u     artifacts.Usage
	}{{"agent", m.Tokens.Agent}, {"user simulator", m.Tokens.UserSimulator}, {"judge", m.Tokens.Judge}} {
		d.Usage = append(d.Usage, pageUsage{Actor: u.actor, Calls: u.u.Calls, Prompt: u.u.PromptTokens, Completion: u.u.CompletionTokens,
			Reasoning: u.u.ReasoningTokens, Total: u.u.PromptTokens + u.u.CompletionTokens, Cost: fmtCost(u.u.CostUSD, u.u.CostUSD > 0)})
	}
	l := m.Latency
	for _, x := range []struct {
		n string
		s float64
	}{{"total", l.TotalS}, {"registration", l.RegistrationS}, {"agent LLM", l.AgentLLMS}, {"user LLM", l.UserLLMS}, {"tools", l.ToolsS}, {"grading", l.GradingS}} {
		d.Timings = append(d.Timings, pageTiming{Name: x.n, Seconds: fmtSeconds(x.s)})
	}

	if len(t.attemptRoots) > 0 {
		for _, td := range t.attemptRoots {
			var at trajectoryDoc
			if _, err := readYAML(root, filepath.Join(td.dir, trajectoryFile), &at); err != nil {
				return nil, err
			}
			d.Attempts = append(d.Attempts, pageAttempt{N: td.attempt, Outcome: at.Outcome, Reason: at.Reason, Termination: at.TerminationReason, Message: at.Message})
		}
	} else if d.Attempts, err = attemptsOf(root, t.Dir); err != nil {
		return nil, err
	}
	return d, nil
}

func gradeOf(gf *result.File, gd *result.Grade) (*pageGrade, error) {
	g := &pageGrade{Pass: gd.Pass, Score: strconv.FormatFloat(gd.Score, 'g', 6, 64), GradedBy: gf.GradedBy,
		JudgeStatus: gf.JudgeStatus, Notes: gd.Notes}
	var err error
	if g.Criteria, err = decodeAll[criterionDoc](gf.CriterionResults); err != nil {
		return nil, fmt.Errorf("criterion_results: %w", err)
	}
	if g.Custom, err = decodeAll[customCheckDoc](gf.CustomChecks); err != nil {
		return nil, fmt.Errorf("custom_checks: %w", err)
	}
	if g.Trace, err = decodeAll[traceCheckDoc](gf.TraceChecks); err != nil {
		return nil, fmt.Errorf("trace_checks: %w", err)
	}
	if len(gf.TraceChecksSummary) > 0 {
		g.TraceSummary = &traceSummaryDoc{}
		if err := json.Unmarshal(gf.TraceChecksSummary, g.TraceSummary); err != nil {
			return nil, fmt.Errorf("trace_checks_summary: %w", err)
		}
	}
	// JSONPath has a row of its own, so state_checks' row leaves its
	// segment to it.
	jsonPath := map[string]bool{}
	if c, ok := gd.Component(result.JSONPath); ok {
		for _, r := range c.Reasons {
			jsonPath[r] = true
		}
	}
	for _, c := range gd.Components {
		pc := pageComponent{Name: c.Name, Score: fmtRate(c.Score), Reasons: c.Reasons}
		if c.Name == task.ComponentStateChecks {
			pc.Reasons = nil
			for _, r := range c.Reasons {
				if !jsonPath[r] {
					pc.Reasons = append(pc.Reasons, r)
				}
			}
		}
		switch {
		case c.Status == result.Scored && c.Passed:
			pc.Verdict = "passed"
		case c.Status == result.Scored:
			pc.Verdict = "failed"
		case c.Status == result.NotEvaluated:
			// A suite that failed to run, a skipped judge: its reasons say why.
			pc.Score, pc.Verdict = "-", "not evaluated"
		default:
			pc.Score, pc.Verdict = "-", string(c.Status)
		}
		g.Components = append(g.Components, pc)
	}
	if len(gf.StateDiff) > 0 {
		g.HasAnyDiff = true
		var diff struct {
			Summary   string   `json:"summary"`
			DiffLines []string `json:"diff_lines"`
			Added     int      `json:"added"`
			Removed   int      `json:"removed"`
			Modified  int      `json:"modified"`
		}
		_ = json.Unmarshal(gf.StateDiff, &diff)
		g.DiffSummary, g.DiffLines = diff.Summary, diff.DiffLines
		g.HasDiff = diff.Added+diff.Removed+diff.Modified > 0 || len(diff.DiffLines) > 0
		g.DiffJSON = prettyJSON(string(gf.StateDiff))
	} else if gf.StateDiffJSON != "" {
		g.HasAnyDiff, g.HasDiff = true, true
		g.DiffJSON = gf.StateDiffJSON
	}
	return g, nil
}

// decodeAll decodes grade.yaml's nested results for the page.
func decodeAll[T any](raws []json.RawMessage) ([]T, error) {
	out := make([]T, 0, len(raws))
	for i, raw := range raws {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// attemptsOf lists attempts/<n>/ of a trial directory, oldest first.
func attemptsOf(root, dir string) ([]pageAttempt, error) {
	entries, err := readDir(root, filepath.Join(dir, "attempts"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []pageAttempt
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if !e.IsDir() || err != nil {
			continue
		}
		var tr trajectoryDoc
		ok, err := readYAML(root, filepath.Join(dir, "attempts", e.Name(), trajectoryFile), &tr)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, pageAttempt{N: n, Outcome: tr.Outcome, Reason: tr.Reason, Termination: tr.TerminationReason, Message: tr.Message})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out, nil
}

// readRoot is the directory the trial's files are read below: the
// artifacts directory it was found in, else its own directory.
func (t Trial) readRoot() string {
	if t.root != "" {
		return t.root
	}
	return t.Dir
}

// writeTrialPage renders one trial's page.
func writeTrialPage(w io.Writer, d *trialPageData) error {
	if err := trialTmpl.Execute(w, d); err != nil {
		return fmt.Errorf("trial %s: %w", d.Trial.Name, err)
	}
	return nil
}

var trialTmpl = template.Must(template.New("trial").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Trial.Name}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem;color:#1d2330;background:#fff;max-width:70rem}
h1{font-size:1.3rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0}
th,td{border:1px solid #d5d9e0;padding:.3rem .6rem;text-align:left;vertical-align:top}
th{background:#f1f3f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{white-space:pre-wrap;word-break:break-word;margin:.3rem 0;font-size:.85rem;background:#f7f8fa;padding:.4rem .6rem;border-radius:4px}
.msg{border-left:4px solid #c5cad3;padding:.3rem .8rem;margin:.6rem 0}
.msg .who{font-weight:600}.msg .when{color:#5b6475;font-size:.8rem;margin-left:.5rem}
.role-assistant{border-color:#2f6fde}.role-user{border-color:#2e8b57}.role-tool{border-color:#8a5a00}.role-system{border-color:#6b4fa3}
.verdict-passed{color:#1e7b34}.verdict-failed,.verdict-errored{color:#b3261e}
.phase-Failed,.phase-GradingFailed{color:#b3261e}.phase-InfraFailed{color:#8a5a00}.phase-Passed{color:#1e7b34}
.note{color:#5b6475;font-size:.9rem}
</style>
</head>
<body>
<p><a class="back" href="{{.Back}}">← campaign</a></p>
<h1>Trial {{.Trial.Name}}</h1>
<table id="summary">
<tr><th>Task</th><td>{{.Trial.Task}}</td></tr>
<tr><th>Agent</th><td>{{.Trial.Agent}}</td></tr>
<tr><th>Index</th><td>{{.Trial.Index}}</td></tr>
<tr><th>Phase</th><td class="phase phase-{{.Trial.Phase}}">{{.Trial.Phase}}</td></tr>
<tr><th>Score</th><td class="num">{{.Score}}</td></tr>
{{if .Trial.Reason}}<tr><th>Reason</th><td>{{.Trial.Reason}}</td></tr>{{end}}
<tr><th>Outcome</th><td>{{.Outcome}}{{if .OutcomeReason}} ({{.OutcomeReason}}){{end}}</td></tr>
{{if .Message}}<tr><th>Message</th><td>{{.Message}}</td></tr>{{end}}
{{if .Grading}}<tr><th>Grading error</th><td>{{.Grading}}</td></tr>{{end}}
<tr><th>Termination</th><td>{{.Trial.Termination}}</td></tr>
<tr><th>Turns</th><td class="num">{{.Trial.Turns}}</td></tr>
<tr><th>Started</th><td>{{.Start}}</td></tr>
<tr><th>Ended</th><td>{{.End}}</td></tr>
{{if .RunID}}<tr><th>Run</th><td>{{.RunID}}</td></tr>{{end}}
<tr><th>Files</th><td>{{if .GradeHref}}<a class="grade" href="{{.GradeHref}}">grade.yaml</a> {{end}}{{if .TransHref}}<a class="transcript" href="{{.TransHref}}">trajectory.yaml</a>{{end}}</td></tr>
</table>

<h2>Grade</h2>
{{with .Grade}}<p id="grade">Score <span class="score">{{.Score}}</span>, {{if .Pass}}<span class="verdict-passed">pass</span>{{else}}<span class="verdict-failed">fail</span>{{end}}{{if .GradedBy}}, graded by {{.GradedBy}}{{end}}.</p>
<table id="components">
<thead><tr><th>Component</th><th>Score</th><th>Verdict</th><th>Reasons</th></tr></thead>
<tbody>
{{range .Components}}<tr class="component" data-component="{{.Name}}"><td>{{.Name}}</td><td class="num">{{.Score}}</td><td class="verdict-{{.Verdict}}">{{.Verdict}}</td><td>{{range $i, $r := .Reasons}}{{if $i}}<br>{{end}}{{$r}}{{else}}–{{end}}</td></tr>
{{end}}</tbody>
</table>
{{if .Notes}}<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .JudgeStatus}}<p>Judge: {{.JudgeStatus}}</p>{{end}}
{{if .Criteria}}<table id="criteria"><thead><tr><th>Criterion</th><th>Met</th><th>Score</th><th>Justification</th></tr></thead><tbody>
{{range .Criteria}}<tr class="criterion"><td>{{.ID}}</td><td>{{.Met}}</td><td class="num">{{.Score}}</td><td>{{.Justification}}</td></tr>
{{end}}</tbody></table>{{end}}
{{if .Custom}}<table id="custom-checks"><thead><tr><th>Custom check</th><th>Status</th><th>Score</th><th>Message</th></tr></thead><tbody>
{{range .Custom}}<tr class="custom-check"><td>{{.CheckName}}</td><td>{{.Status}}</td><td class="num">{{.Score}}</td><td>{{.Message}}</td></tr>
{{end}}</tbody></table>{{end}}
{{if .Trace}}<table id="trace-checks"><thead><tr><th>Trace check</th><th>Kind</th><th>Severity</th><th>Passed</th><th>Message</th></tr></thead><tbody>
{{range .Trace}}<tr class="trace-check"><td>{{.ID}}</td><td>{{.Kind}}</td><td>{{.Severity}}</td><td>{{if .Undecided}}undecided{{else}}{{.Passed}}{{end}}</td><td>{{.Message}}</td></tr>
{{end}}</tbody></table>{{end}}
{{with .TraceSummary}}{{if or .WinningPath .GateFailed}}<p>Trace: winning path {{.WinningPath}}{{if .GateFailed}}, failed gates {{range .FailedGateIDs}}{{.}} {{end}}{{end}}</p>{{end}}{{end}}

<h2>State diff</h2>
{{if .HasAnyDiff}}<div class="state-diff" id="state-diff">{{if .DiffSummary}}<p class="diff-summary">{{.DiffSummary}}</p>{{end}}
{{if .DiffLines}}<pre class="diff-lines">{{range .DiffLines}}{{.}}
{{end}}</pre>{{end}}
<details{{if not .DiffLines}} open{{end}}><summary>state_diff</summary><pre class="diff-json">{{.DiffJSON}}</pre></details></div>
{{else}}<p class="note" id="no-state-diff">No state diff: the final state matched, or no state check compared it.</p>{{end}}
{{else}}<p class="note" id="no-grade">No grade: the trial ended {{.Outcome}} without one.</p>{{end}}

<h2>Conversation</h2>
<div id="conversation">
{{range .Messages}}<div class="msg role-{{.Role}}"><span class="who">{{.Role}}</span><span class="when">{{.Time}}</span>{{if .ToolCallID}} <span class="result-of">result of {{.ToolCallID}}</span>{{if .Status}} <span class="status">[{{.Status}}, {{.Latency}}]</span>{{end}}{{end}}
{{if .Content}}<pre class="content">{{.Content}}</pre>{{end}}
{{range .Calls}}<div class="tool-call"><span class="tool-name">→ {{.Name}}</span> <span class="call-id">({{.ID}})</span><pre class="tool-args">{{.Args}}</pre></div>
{{end}}</div>
{{else}}<p class="note">No messages recorded.</p>
{{end}}</div>

<h2>Tool calls</h2>
{{if .Records}}<table id="tool-calls">
<thead><tr><th>#</th><th>Call</th><th>Executor</th><th>Tool</th><th>Arguments</th><th>Status</th><th>Latency</th><th>Result</th></tr></thead>
<tbody>
{{range .Records}}<tr class="tool-record"><td class="num">{{.Sequence}}</td><td>{{.CallID}}</td><td>{{.Executor}}</td><td>{{.Tool}}</td><td><pre>{{.Args}}</pre></td><td>{{.Status}}</td><td class="num">{{.Latency}}</td><td><pre class="tool-output">{{.Output}}</pre></td></tr>
{{end}}</tbody>
</table>{{else}}<p class="note">No tool calls.</p>{{end}}

<h2>Cost and timing</h2>
<p>Cost over every attempt: <span id="cost">{{.Cost}}</span>; tokens {{.Trial.Tokens}}.</p>
<table id="usage">
<thead><tr><th>Actor (latest attempt)</th><th>Calls</th><th>Prompt</th><th>Completion</th><th>Reasoning</th><th>Total</th><th>Cost</th></tr></thead>
<tbody>
{{range .Usage}}<tr><td>{{.Actor}}</td><td class="num">{{.Calls}}</td><td class="num">{{.Prompt}}</td><td class="num">{{.Completion}}</td><td class="num">{{.Reasoning}}</td><td class="num">{{.Total}}</td><td class="num">{{.Cost}}</td></tr>
{{end}}</tbody>
</table>
<table id="timings">
<thead><tr><th>Wall clock (latest attempt)</th><th>Seconds</th></tr></thead>
<tbody>
{{range .Timings}}<tr><td>{{.Name}}</td><td class="num">{{.Seconds}}</td></tr>
{{end}}</tbody>
</table>

{{if .Attempts}}<h2>Attempts</h2>
<table id="attempts">
<thead><tr><th>Attempt</th><th>Outcome</th><th>Reason</th><th>Termination</th><th>Message</th></tr></thead>
<tbody>
{{range .Attempts}}<tr><td class="num">{{.N}}</td><td>{{.Outcome}}</td><td>{{.Reason}}</td><td>{{.Termination}}</td><td>{{.Message}}</td></tr>
{{end}}</tbody>
</table>{{end}}
</body>
</html>
`))
