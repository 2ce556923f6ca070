package artifacts

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// File names of one attempt.
const (
	TrajectoryFile = "trajectory.yaml"
	GradeFile      = "grade.yaml"
	MetricsFile    = "metrics.yaml"
)

// Dir is the trial's directory under root: trials/<task_id>/<trial_index>.
func Dir(root, taskID string, trialIndex int) string {
	return filepath.Join(root, "trials", safeSegment(taskID), strconv.Itoa(trialIndex))
}

// AttemptDir is one attempt's own directory under the trial's.
func AttemptDir(root, taskID string, trialIndex, attempt int) string {
	return filepath.Join(Dir(root, taskID, trialIndex), "attempts", strconv.Itoa(attempt))
}

// safeSegment keeps a task id from escaping the trials directory: anything
// outside [A-Za-z0-9._-] becomes "_" and the dot names become "_".
func safeSegment(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out == "" || out == "." || out == ".." {
		return "_"
	}
	return out
}

// Write writes the attempt's files into its attempts/<n>/ directory and then
// into the trial's directory, and returns the trial's directory.
func Write(root string, a *Attempt) (string, error) {
	if root == "" {
		return "", fmt.Errorf("write artifacts: empty root directory")
	}
	if a == nil {
		return "", fmt.Errorf("write artifacts: nil attempt")
	}
	docs := map[string]any{
		TrajectoryFile: trajectoryDoc(a),
		MetricsFile:    metricsDoc(a),
	}
	if a.Grade != nil {
		g, err := gradeDoc(a)
		if err != nil {
			return "", fmt.Errorf("write artifacts of trial %q: %w", a.TrialID, err)
		}
		docs[GradeFile] = g
	}
	rendered := make(map[string][]byte, len(docs))
	for name, doc := range docs {
		b, err := yaml.Marshal(doc)
		if err != nil {
			return "", fmt.Errorf("write artifacts of trial %q: render %s: %w", a.TrialID, name, err)
		}
		rendered[name] = b
	}
	top := Dir(root, a.TaskID, a.TrialIndex)
	for _, dir := range []string{AttemptDir(root, a.TaskID, a.TrialIndex, a.AttemptNumber), top} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("write artifacts of trial %q: %w", a.TrialID, err)
		}
		for _, name := range []string{TrajectoryFile, GradeFile, MetricsFile} {
			b, ok := rendered[name]
			if !ok {
				// An attempt without a grade must not leave an earlier
				// attempt's grade beside its own trajectory.
				if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
					return "", fmt.Errorf("write artifacts of trial %q: %w", a.TrialID, err)
				}
				continue
			}
			if err := WriteFileAtomic(filepath.Join(dir, name), b); err != nil {
				return "", fmt.Errorf("write artifacts of trial %q: %w", a.TrialID, err)
			}
		}
	}
	return top, nil
}

// WriteFileAtomic writes data to a temporary file in path's directory, syncs
// it and renames it over path.
func WriteFileAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
