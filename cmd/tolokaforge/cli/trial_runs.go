package cli

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
	"time"

	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/result"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// runDir is one `trial run`'s own directory under --out: a run never
// writes into another's, so earlier results are never overwritten.
type runDir struct {
	ID, Dir string
	Resumed bool
}

// runIDPattern is what a run id may be: one path segment, never "." or "..".
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// newRunDir creates <out>/local-<UTC time>[-N]: Mkdir is exclusive, so two
// runs started in the same second get different directories.
func newRunDir(out string, now time.Time) (*runDir, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("trial run: --out: %w", err)
	}
	base := "local-" + now.UTC().Format("20060102T150405Z")
	for i := 1; i < 1000; i++ {
		id := base
		if i > 1 {
			id = base + "-" + strconv.Itoa(i)
		}
		err := os.Mkdir(filepath.Join(out, id), 0o755)
		if err == nil {
			return &runDir{ID: id, Dir: filepath.Join(out, id)}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("trial run: new run directory: %w", err)
		}
	}
	return nil, fmt.Errorf("trial run: new run directory: %s-1..999 all exist under %s", base, out)
}

// resumeRunDir finds run id under out; it creates nothing.
func resumeRunDir(out, id string) (*runDir, error) {
	if !runIDPattern.MatchString(id) {
		return nil, fmt.Errorf("trial run: --resume %q: not a run id (one name of letters, digits, '.', '_' and '-', as printed by an earlier run)", id)
	}
	dir := filepath.Join(out, id)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		runs := listRuns(out)
		known := "none"
		if len(runs) > 0 {
			known = strings.Join(runs, ", ")
		}
		return nil, fmt.Errorf("trial run: --resume %s: no such run under %s (runs there: %s)", id, out, known)
	}
	return &runDir{ID: id, Dir: dir, Resumed: true}, nil
}

// listRuns is the newest run ids under out, at most 5.
func listRuns(out string) []string {
	ents, err := os.ReadDir(out)
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && runIDPattern.MatchString(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	if len(ids) > 5 {
		ids = ids[:5]
	}
	return ids
}

// recordedTrial is what an earlier attempt of a run left for one trial.
type recordedTrial struct {
	Dir     string
	Outcome string
	Pass    bool
	// Score is the recorded grade's (nil: none).
	Score *float64
	// LastAttempt is the highest attempts/<n> recorded (0: none).
	LastAttempt int
}

// Done says whether the trial has a result a resume keeps: any outcome but
// InfraFailed (an infrastructure fault, or a run stopped midway, says
// nothing about the agent and is what a resume reruns).
func (r recordedTrial) Done() bool {
	return r.Outcome != "" && r.Outcome != string(evalv1.OutcomeInfraFailed)
}

// readRecorded reads the trial's top-level trajectory and grade in a run.
func readRecorded(run *runDir, taskID string, index int) (recordedTrial, error) {
	rt := recordedTrial{Dir: filepath.Join(run.Dir, filepath.FromSlash(artifacts.RelDir(taskID, index)))}
	if ents, err := os.ReadDir(filepath.Join(rt.Dir, "attempts")); err == nil {
		for _, e := range ents {
			if n, err := strconv.Atoi(e.Name()); err == nil && n > rt.LastAttempt {
				rt.LastAttempt = n
			}
		}
	}
	var tr struct {
		Outcome string `json:"outcome"`
	}
	if ok, err := readYAMLFile(filepath.Join(rt.Dir, artifacts.TrajectoryFile), &tr); err != nil || !ok {
		return rt, err
	}
	rt.Outcome = tr.Outcome
	gradePath := filepath.Join(rt.Dir, artifacts.GradeFile)
	b, err := os.ReadFile(gradePath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rt, nil
	case err != nil:
		return rt, fmt.Errorf("trial run: %w", err)
	}
	f, err := result.ParseFile(b)
	if err != nil {
		return rt, fmt.Errorf("trial run: recorded result %s: %w", gradePath, err)
	}
	rt.Pass, rt.Score = f.BinaryPass, &f.Score
	return rt, nil
}

func readYAMLFile(path string, into any) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("trial run: %w", err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		return false, fmt.Errorf("trial run: recorded result %s: %w", path, err)
	}
	return true, nil
}
