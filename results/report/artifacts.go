package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/result"
	"tolokaforge.io/operator/api/rootfs"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"sigs.k8s.io/yaml"
)

// The files of one attempt (api/artifacts).
const (
	trajectoryFile = "trajectory.yaml"
	gradeFile      = "grade.yaml"
	metricsFile    = "metrics.yaml"
)

type trajectoryDoc struct {
	TrialID string `json:"trial_id"`
	// Record is who ran the trial (agent, campaign, Trial), as it says.
	result.Record
	TaskID            string `json:"task_id"`
	TrialIndex        int    `json:"trial_index"`
	Attempt           int    `json:"attempt"`
	Outcome           string `json:"outcome"`
	Reason            string `json:"reason"`
	Message           string `json:"message"`
	TerminationReason string `json:"termination_reason"`
	Turns             int    `json:"turns"`
}

type criterionDoc struct {
	ID            string  `json:"id"`
	Met           bool    `json:"met"`
	Score         float64 `json:"score"`
	Justification string  `json:"justification"`
}

type customCheckDoc struct {
	CheckName string  `json:"check_name"`
	Status    string  `json:"status"`
	Score     float64 `json:"score"`
	Message   string  `json:"message"`
}

type traceCheckDoc struct {
	ID        string  `json:"id"`
	Kind      string  `json:"kind"`
	Passed    bool    `json:"passed"`
	Weight    float64 `json:"weight"`
	Message   string  `json:"message"`
	Severity  string  `json:"severity"`
	Undecided bool    `json:"undecided"`
}

type traceSummaryDoc struct {
	WinningPath   string   `json:"winning_path"`
	GateFailed    bool     `json:"gate_failed"`
	FailedGateIDs []string `json:"failed_gate_ids"`
}

// regradeDirPrefix starts the name of a `tolokaforge regrade` output
// directory (regrade-<timestamp>).
const regradeDirPrefix = "regrade-"

var attemptDir = regexp.MustCompile(`^attempt-([0-9]+)$`)

// trialDir is one trials/<task_id>/<index> directory found under the root.
type trialDir struct {
	dir     string
	prefix  string // the path between the root and trials/, attempt-N removed
	attempt int    // N of a manager's attempt-N directory, else 0
	task    string
	index   int
}

// FromArtifacts reads every trial under dir. Layouts:
//
//	DIR/trials/<task_id>/<index>/...           one agent, named "local"
//	DIR/<agent>/trials/<task_id>/<index>/...   one directory per agent
//	DIR/<ns>/<trial>/attempt-<n>/trials/...    the manager's --artifacts-dir:
//	                                           the latest attempt of each trial
//
// A trial counts once: its top-level files are its latest attempt, and only
// spend is summed over its attempts.
func FromArtifacts(dir string) (*Report, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("artifacts %s: %w", dir, err)
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("artifacts %s: not a directory: %v", dir, err)
	}
	confined, err := rootfs.Open(root)
	if err != nil {
		return nil, fmt.Errorf("artifacts %s: %w", dir, err)
	}
	defer confined.Close()
	var found []trialDir
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// The walk never descends a link, but a link out of the
			// directory means the artifacts are not all here (or are
			// planted): refused, naming it, rather than a report that
			// silently leaves trials out.
			rel, _ := filepath.Rel(root, p)
			if _, err := confined.Stat(rel); err != nil {
				var esc *rootfs.EscapeError
				if errors.As(err, &esc) {
					return err
				}
			}
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), regradeDirPrefix) || strings.HasPrefix(d.Name(), "."+regradeDirPrefix)) {
			// A regrade's results (and an unfinished one's hidden
			// .regrade-tmp-*) sit beside the originals; they are not more
			// trials of the run (point the report at the regrade
			// directory itself to read them).
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != trajectoryFile {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		n := len(parts)
		if n < 4 || parts[n-4] != "trials" {
			return nil // an attempts/<n>/ copy or something else
		}
		idx, err := strconv.Atoi(parts[n-2])
		if err != nil {
			return nil
		}
		td := trialDir{dir: filepath.Dir(p), task: parts[n-3], index: idx}
		prefix := parts[:n-4]
		if k := len(prefix); k > 0 {
			if m := attemptDir.FindStringSubmatch(prefix[k-1]); m != nil {
				td.attempt, _ = strconv.Atoi(m[1])
				prefix = prefix[:k-1]
			}
		}
		td.prefix = strings.Join(prefix, "/")
		found = append(found, td)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("artifacts %s: %w", dir, err)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("artifacts %s: no trials/<task_id>/<index>/%s found", dir, trajectoryFile)
	}
	// Group the manager's attempt-N roots of one trial.
	type key struct {
		prefix, task string
		index        int
	}
	groups := map[key][]trialDir{}
	var keys []key
	for _, td := range found {
		k := key{td.prefix, td.task, td.index}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], td)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.prefix != b.prefix {
			return a.prefix < b.prefix
		}
		if a.task != b.task {
			return a.task < b.task
		}
		return a.index < b.index
	})
	rep := &Report{Title: "artifacts " + dir}
	for _, k := range keys {
		g := groups[k]
		sort.Slice(g, func(i, j int) bool { return g[i].attempt < g[j].attempt })
		t, err := readTrial(root, g)
		if err != nil {
			return nil, err
		}
		rep.Trials = append(rep.Trials, t)
	}
	rep.normalize()
	return rep, nil
}

// maxArtifactFileBytes bounds each artifacts file the report reads. A
// trajectory of a thousand turns is a few megabytes; a larger file is
// refused rather than decoded whole.
const maxArtifactFileBytes = 64 << 20

// readFile reads path, a file below root, without following a link out of
// root (refused, naming the link and its target), a file that is not a
// regular file, or one over MaxArtifactFileBytes. A missing file is
// fs.ErrNotExist.
func readFile(root, path string) ([]byte, error) {
	r, err := rootfs.Open(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rel, err := r.Rel(path)
	if err != nil {
		return nil, err
	}
	data, err := r.ReadFile(rel, maxArtifactFileBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("artifacts %s: %w", root, err)
	}
	return data, err
}

// readDir lists path, a directory below root, as readFile reads a file.
func readDir(root, path string) ([]fs.DirEntry, error) {
	r, err := rootfs.Open(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rel, err := r.Rel(path)
	if err != nil {
		return nil, err
	}
	entries, err := r.ReadDir(rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("artifacts %s: %w", root, err)
	}
	return entries, err
}

// readGrade reads a grade.yaml and api/result's reading of it; both nil
// when the attempt has no grade.
func readGrade(root, path string) (*result.File, *result.Grade, error) {
	data, err := readFile(root, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	f, err := result.ParseFile(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	g, err := f.Grade()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, g, nil
}

func readYAML(root, path string, into any) (bool, error) {
	data, err := readFile(root, path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

// readTrial reads one trial from its directories (more than one only in the
// manager's attempt-N layout), the last one being the latest attempt.
func readTrial(root string, g []trialDir) (Trial, error) {
	latest := g[len(g)-1]
	var tr trajectoryDoc
	if _, err := readYAML(root, filepath.Join(latest.dir, trajectoryFile), &tr); err != nil {
		return Trial{}, err
	}
	// Who ran it is the trial's own record. Only a record written before
	// it carried an agent falls back to the folder it sits in (the layout
	// `results pull` writes names agents' folders).
	out := Trial{
		Name:           filepath.ToSlash(filepath.Join(latest.prefix, "trials", latest.task, strconv.Itoa(latest.index))),
		Agent:          tr.Agent,
		Task:           tr.TaskID,
		Index:          tr.TrialIndex,
		Turns:          tr.Turns,
		Termination:    tr.TerminationReason,
		TranscriptFile: filepath.Join(latest.dir, trajectoryFile),
		Dir:            latest.dir,
		root:           root,
	}
	if len(g) > 1 {
		out.attemptRoots = g
	}
	if out.Agent == "" {
		out.Agent = latest.prefix
	}
	if out.Agent == "" {
		out.Agent = "local"
	}
	if tr.Trial != "" {
		out.Name = tr.Namespace + "/" + tr.Trial
	}
	if out.Task == "" {
		out.Task = latest.task
	}
	_, gd, err := readGrade(root, filepath.Join(latest.dir, gradeFile))
	if err != nil {
		return Trial{}, err
	}
	hasGrade := gd != nil
	if hasGrade {
		out.GradeFile = filepath.Join(latest.dir, gradeFile)
		s := gd.Score
		out.Score = &s
		out.Components = gd.Components
	}
	switch tr.Outcome {
	case string(evalv1.OutcomePassed), string(evalv1.OutcomeFailed),
		"Graded": // artifacts written before outcomes were the API's
		out.Phase = string(evalv1.PhaseFailed)
		if hasGrade && gd.Pass {
			out.Phase = string(evalv1.PhasePassed)
		}
	case "SelfGraded": // the same, for a host-graded attempt
		out.Phase = string(evalv1.PhaseFailed)
	case string(evalv1.PhaseGradingFailed), string(evalv1.PhaseInvalid), string(evalv1.PhaseProtocolSkew), string(evalv1.PhaseInfraFailed):
		out.Phase = tr.Outcome
	default:
		return Trial{}, fmt.Errorf("%s: unknown outcome %q", out.TranscriptFile, tr.Outcome)
	}
	switch out.Phase {
	case string(evalv1.PhaseFailed):
		switch {
		case tr.TerminationReason != "" && tr.TerminationReason != "agent_done" && tr.TerminationReason != "user_stop":
			out.Reason = "termination: " + tr.TerminationReason
		case hasGrade && gd.DiffSummary != "":
			out.Reason = shortReason(gd.DiffSummary)
		case hasGrade:
			out.Reason = shortReason(gd.FirstFailing())
		default:
			out.Reason = "failed without a grade"
		}
	case string(evalv1.PhasePassed):
	default:
		out.Reason = out.Phase
		if tr.Reason != "" && tr.Reason != out.Phase {
			out.Reason += ": " + tr.Reason
		}
	}

	// Spend: every attempt, whichever layout recorded them.
	var spend []artifacts.Metrics
	for _, td := range g {
		ms, err := attemptMetrics(root, td.dir)
		if err != nil {
			return Trial{}, err
		}
		spend = append(spend, ms...)
	}
	var lm artifacts.Metrics
	if _, err := readYAML(root, filepath.Join(latest.dir, metricsFile), &lm); err != nil {
		return Trial{}, err
	}
	out.LatencyS = lm.Latency.TotalS
	for _, m := range spend {
		for _, u := range []artifacts.Usage{m.Tokens.Agent, m.Tokens.UserSimulator, m.Tokens.Judge} {
			out.PromptTokens += u.PromptTokens
			out.CompletionTokens += u.CompletionTokens
			out.ReasoningTokens += u.ReasoningTokens
		}
		out.Tokens += m.Tokens.TotalTokens
		out.CostUSD += m.Tokens.TotalCostUSD
	}
	out.Costed = out.CostUSD > 0
	return out, nil
}

// attemptMetrics are the metrics of every attempt kept under a trial
// directory (attempts/<n>/metrics.yaml), else its top-level metrics.yaml.
func attemptMetrics(root, dir string) ([]artifacts.Metrics, error) {
	entries, err := readDir(root, filepath.Join(dir, "attempts"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var out []artifacts.Metrics
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		var m artifacts.Metrics
		ok, err := readYAML(root, filepath.Join(dir, "attempts", e.Name(), metricsFile), &m)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, m)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	var m artifacts.Metrics
	ok, err := readYAML(root, filepath.Join(dir, metricsFile), &m)
	if err != nil || !ok {
		return nil, err
	}
	return []artifacts.Metrics{m}, nil
}
