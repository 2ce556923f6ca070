package grading

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
)

// path_glob checks: file assertions under the trial's file-tool directory, the remedy
// the runner offers for JSONPaths rooted at the core engine's filesystem. A check
// passes when any matching file satisfies it; exists, absent and count read the number
// of matching regular files.

// checkGlob evaluates a path_glob check over the files under the trial's work dir.
func checkGlob(c *task.JSONPathCheck, workDir string, re *regexp.Regexp) (bool, string) {
	op, operand, err := operator(c)
	if err != nil {
		return false, err.Error()
	}
	pattern := filepath.ToSlash(c.PathGlob)
	if filepath.IsAbs(c.PathGlob) || strings.HasPrefix(pattern, "/") || containsDotDot(pattern) {
		return false, fmt.Sprintf("path_glob %q must be relative to the trial's directory, without ..", c.PathGlob)
	}
	if workDir == "" {
		return false, "the trial has no file-tool directory to match path_glob against"
	}
	matches, err := filepath.Glob(filepath.Join(workDir, filepath.FromSlash(pattern)))
	if err != nil {
		return false, fmt.Sprintf("path_glob %q: %v", c.PathGlob, err)
	}
	var files []string
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() {
			files = append(files, m)
		}
	}
	if decided, ok, msg := presence(op, operand, len(files), "file"); decided {
		if ok {
			return true, ""
		}
		return false, c.PathGlob + " " + msg
	}
	if len(files) == 0 {
		return false, fmt.Sprintf("path_glob %s matched no file", c.PathGlob)
	}
	switch op {
	case "equals", "equals_ci", "not_equals", "contains", "contains_ci", "matches":
	default:
		return false, fmt.Sprintf("operator %s does not apply to file contents", op)
	}
	if _, ok := operand.(canonical.String); !ok && op != "not_equals" {
		return false, fmt.Sprintf("operator %s needs a string to compare file contents with, got %s", op, show(operand))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return false, fmt.Sprintf("reading %s: %v", relTo(workDir, f), err)
		}
		if ok, _ := holds(op, canonical.String(string(data)), operand, re); ok {
			return true, ""
		}
	}
	return false, fmt.Sprintf("no file matching %s satisfies %s %s", c.PathGlob, op, show(operand))
}

func containsDotDot(pattern string) bool {
	for _, part := range strings.Split(pattern, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

func relTo(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil {
		return r
	}
	return p
}
