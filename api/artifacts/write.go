package artifacts

import (
	"context"
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
	return filepath.Join(root, "trials", Segment(taskID), strconv.Itoa(trialIndex))
}

// AttemptDir is one attempt's own directory under the trial's.
func AttemptDir(root, taskID string, trialIndex, attempt int) string {
	return filepath.Join(Dir(root, taskID, trialIndex), "attempts", strconv.Itoa(attempt))
}

// Segment keeps a name (a task id, an agent name) to one path segment, so it
// cannot escape the directory it is joined to: anything outside
// [A-Za-z0-9._-] becomes "_" and the dot names become "_". Every writer of
// the layout (the host, `results pull`) names directories with it, so the
// same id lands in the same directory whoever wrote it.
func Segment(s string) string {
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

// Sink receives an attempt's files by slash-separated name ("trials/t/0/
// grade.yaml") under one root: a local directory (DirSink) or a blob store
// (blobstore.Store.Sink). Put must leave the old object or the new one,
// never half of one.
type Sink interface {
	Put(ctx context.Context, name string, data []byte) error
	// Delete removes name; a name that is not there is no error.
	Delete(ctx context.Context, name string) error
	// Location is name's path or URL, for people and the Trial's status.
	Location(name string) string
}

// DirSink is a Sink writing under a local directory.
type DirSink string

func (d DirSink) Put(_ context.Context, name string, data []byte) error {
	p := d.Location(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return WriteFileAtomic(p, data)
}

func (d DirSink) Delete(_ context.Context, name string) error {
	if err := os.Remove(d.Location(name)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

func (d DirSink) Location(name string) string {
	return filepath.Join(string(d), filepath.FromSlash(name))
}

// RelDir is the trial's directory relative to a root, slash-separated.
func RelDir(taskID string, trialIndex int) string {
	return "trials/" + Segment(taskID) + "/" + strconv.Itoa(trialIndex)
}

// Write writes the attempt's files into its attempts/<n>/ directory and then
// into the trial's directory, and returns the trial's directory.
func Write(root string, a *Attempt) (string, error) {
	if root == "" {
		return "", fmt.Errorf("write artifacts: empty root directory")
	}
	return WriteTo(context.Background(), DirSink(root), a)
}

// WriteTo is Write into any Sink; it returns the Location of the trial's
// directory.
func WriteTo(ctx context.Context, s Sink, a *Attempt) (string, error) {
	if s == nil {
		return "", fmt.Errorf("write artifacts: no sink")
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
	top := RelDir(a.TaskID, a.TrialIndex)
	// The attempt's own copy first, the top level last: a reader of the top
	// level finds the attempt's history already there.
	for _, dir := range []string{top + "/attempts/" + strconv.Itoa(a.AttemptNumber), top} {
		for _, name := range []string{TrajectoryFile, GradeFile, MetricsFile} {
			b, ok := rendered[name]
			if !ok {
				// An attempt without a grade must not leave an earlier
				// attempt's grade beside its own trajectory.
				if err := s.Delete(ctx, dir+"/"+name); err != nil {
					return "", fmt.Errorf("write artifacts of trial %q: %w", a.TrialID, err)
				}
				continue
			}
			if err := s.Put(ctx, dir+"/"+name, b); err != nil {
				return "", fmt.Errorf("write artifacts of trial %q: %w", a.TrialID, err)
			}
		}
	}
	return s.Location(top), nil
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
