package runner

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"tolokaforge.io/operator/runner/tools/builtin"
)

// provision creates the trial's directory layout and writes the task's
// tool_artifacts (base64) and initial_state.filesystem (text) into it. Paths are
// held to the file tools' rule: relative, no "..", written through os.Root so a
// symlink cannot lead outside either. The tool_artifacts are written twice:
// into artifacts, the tools' working directory, and into pack, which is then
// made read-only (files 0444, folders 0555) for the Python checks to import
// from.
func provision(lay layout, artifacts map[string]string, filesystem map[string]string) error {
	for _, d := range []string{lay.files, lay.artifacts, lay.pack, lay.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	if err := os.Mkdir(lay.verifier, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", lay.verifier, err)
	}
	for _, name := range sortedKeys(artifacts) {
		data, err := base64.StdEncoding.DecodeString(artifacts[name])
		if err != nil {
			return fmt.Errorf("task.tool_artifacts[%q]: not base64: %w", name, err)
		}
		if err := writeUnder(lay.artifacts, name, data, 0o755); err != nil {
			return fmt.Errorf("task.tool_artifacts[%q]: %w", name, err)
		}
		if err := writeUnder(lay.pack, name, data, 0o444); err != nil {
			return fmt.Errorf("task.tool_artifacts[%q]: the checks' copy: %w", name, err)
		}
	}
	if err := setTreeMode(lay.pack, 0o555); err != nil {
		return fmt.Errorf("make the checks' copy of the tool_artifacts read-only: %w", err)
	}
	for _, name := range sortedKeys(filesystem) {
		if err := writeUnder(lay.files, name, []byte(filesystem[name]), 0o644); err != nil {
			return fmt.Errorf("task.initial_state.filesystem[%q]: %w", name, err)
		}
	}
	return nil
}

func writeUnder(dir, name string, data []byte, perm os.FileMode) error {
	rel, err := builtin.CleanRelPath(name)
	if err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "arguments.path: "))
	}
	if rel == "." {
		return fmt.Errorf("names a directory, not a file")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if d := path.Dir(rel); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return root.WriteFile(rel, data, perm)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// setTreeMode sets the mode of every folder under (and including) root; the
// files keep theirs. A read-only pack is made writable again (0o755) before
// the trial's directory is removed.
func setTreeMode(root string, mode os.FileMode) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("chmod %s: %w", p, err)
		}
		return nil
	})
}

// removeTrialDir removes a trial's directory, its read-only pack included.
func removeTrialDir(dir string) error {
	if err := setTreeMode(newLayout(dir).pack, 0o755); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}
