package pack

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FindTasks lists the task directories dir holds, sorted: dir itself when
// it has a task.yaml, else every directory below it with one (a project's
// tasks/<id>/ or tasks/<category>/<id>/, or a folder of packs). A pack's own
// subdirectories are its files, never packs; hidden directories are
// skipped. A directory with no task is an error naming it.
func FindTasks(dir string) ([]string, error) {
	if isTaskDir(dir) {
		return []string{dir}, nil
	}
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || p == dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if isTaskDir(p) {
			found = append(found, p)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("task directory %s: %w", dir, err)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("task directory %s holds no task: no task.yaml (or Harbor's task.toml with instruction.md) in it or in any directory below it (a task pack holds task.yaml; a project holds tasks/<id>/task.yaml; a Harbor task holds task.toml and instruction.md)", dir)
	}
	sort.Strings(found)
	return found, nil
}

// isTaskDir says dir holds a task: task.yaml (Tolokaforge, Terminal-Bench
// 1) or Harbor's task.toml with instruction.md.
func isTaskDir(dir string) bool {
	regular := func(name string) bool {
		st, err := os.Stat(filepath.Join(dir, name))
		return err == nil && st.Mode().IsRegular()
	}
	return regular("task.yaml") || (regular(harborTaskFile) && regular(harborInstruction))
}

// ConvertProject converts every task dir holds (FindTasks): a project, a
// folder of packs or one pack. Every task is converted, and every failure
// is returned together, each naming its task directory.
func ConvertProject(ctx context.Context, dir string, opts Options) ([]*converted, error) {
	dirs, err := FindTasks(dir)
	if err != nil {
		return nil, err
	}
	var out []*converted
	var errs []string
	for _, d := range dirs {
		c, err := ConvertContext(ctx, d, opts)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("project %s: %w", dir, ctx.Err())
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		out = append(out, c)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("project %s: %d of %d tasks not converted:\n%s", dir, len(errs), len(dirs), strings.Join(errs, "\n"))
	}
	return out, nil
}
