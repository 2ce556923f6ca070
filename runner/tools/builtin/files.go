package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools"
)

// maxFileBytes bounds read_file and write_file: the content travels through the
// LLM context and the gRPC message either way.
const maxFileBytes = 1 << 20

const pathProp = `"path":{"type":"string","minLength":1,"description":"Path relative to the working directory; absolute paths and '..' are refused."}`

func init() {
	register(Builtin{
		Name:        "read_file",
		Description: "Read a text file from the working directory.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` + pathProp + `},` +
			`"required":["path"],"additionalProperties":false}`),
		Category: task.CategoryRead,
		New:      func(env Env) tools.Tool { return toolFunc(env.readFile) },
	})
	register(Builtin{
		Name:        "write_file",
		Description: "Write a text file in the working directory, creating parent directories and replacing an existing file.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` + pathProp + `,` +
			`"content":{"type":"string","description":"The file's new content."}},` +
			`"required":["path","content"],"additionalProperties":false}`),
		Category: task.CategoryWrite,
		New:      func(env Env) tools.Tool { return toolFunc(env.writeFile) },
	})
	register(Builtin{
		Name:        "list_dir",
		Description: "List a directory of the working directory; subdirectories end with '/'.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","default":".","description":"Directory relative to the working directory (default: the working directory)."}},` +
			`"additionalProperties":false}`),
		Category: task.CategoryRead,
		New:      func(env Env) tools.Tool { return toolFunc(env.listDir) },
	})
}

// CleanRelPath checks a path a tool was given and returns it cleaned, slash
// separated and relative. Absolute paths and any '..' element are refused
// outright, even one that would stay inside the root: the rule is easier to
// state to an agent than "may not escape". Symlinks are checked at open time
// by os.Root.
func CleanRelPath(p string) (string, error) {
	if p == "" {
		return "", &tools.ArgumentError{Path: "arguments.path", Msg: "required"}
	}
	if strings.ContainsRune(p, 0) {
		return "", &tools.ArgumentError{Path: "arguments.path", Msg: "contains a NUL byte"}
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return "", &tools.ArgumentError{Path: "arguments.path", Msg: fmt.Sprintf("%q is absolute; give a path relative to the working directory", p)}
	}
	for _, elem := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if elem == ".." {
			return "", &tools.ArgumentError{Path: "arguments.path", Msg: fmt.Sprintf("%q contains '..'; paths may not leave the working directory", p)}
		}
	}
	return path.Clean(filepath.ToSlash(p)), nil
}

func (env Env) openRoot() (*os.Root, error) {
	if env.Root == "" {
		return nil, errors.New("no working directory is configured for this trial")
	}
	r, err := os.OpenRoot(env.Root)
	if err != nil {
		return nil, fmt.Errorf("open working directory: %w", err)
	}
	return r, nil
}

type readArgs struct {
	Path string `json:"path"`
}

func (env Env) readFile(_ context.Context, raw json.RawMessage) (string, error) {
	var a readArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	rel, err := CleanRelPath(a.Path)
	if err != nil {
		return "", err
	}
	root, err := env.openRoot()
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return "", fileError("read", a.Path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fileError("read", a.Path, err)
	}
	if st.IsDir() {
		return "", fmt.Errorf("read %s: is a directory", a.Path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return "", fileError("read", a.Path, err)
	}
	if len(data) > maxFileBytes {
		return "", fmt.Errorf("read %s: larger than %d bytes", a.Path, maxFileBytes)
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("read %s: not a UTF-8 text file", a.Path)
	}
	return string(data), nil
}

type writeArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

func (env Env) writeFile(_ context.Context, raw json.RawMessage) (string, error) {
	var a writeArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	rel, err := CleanRelPath(a.Path)
	if err != nil {
		return "", err
	}
	if a.Content == nil {
		return "", &tools.ArgumentError{Path: "arguments.content", Msg: "required"}
	}
	if len(*a.Content) > maxFileBytes {
		return "", &tools.ArgumentError{Path: "arguments.content", Msg: fmt.Sprintf("larger than %d bytes", maxFileBytes)}
	}
	if rel == "." {
		return "", fmt.Errorf("write %s: is a directory", a.Path)
	}
	root, err := env.openRoot()
	if err != nil {
		return "", err
	}
	defer root.Close()
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return "", fileError("write", a.Path, err)
		}
	}
	if err := root.WriteFile(rel, []byte(*a.Content), 0o644); err != nil {
		return "", fileError("write", a.Path, err)
	}
	return fmt.Sprintf("Wrote %d bytes to %s", len(*a.Content), rel), nil
}

type listArgs struct {
	Path string `json:"path"`
}

func (env Env) listDir(_ context.Context, raw json.RawMessage) (string, error) {
	var a listArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.Path == "" {
		a.Path = "."
	}
	rel, err := CleanRelPath(a.Path)
	if err != nil {
		return "", err
	}
	root, err := env.openRoot()
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return "", fileError("list", a.Path, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return "", fileError("list", a.Path, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	sort.Strings(names)
	out, err := task.Encode(names) // no HTML escaping: "a&b.txt" stays readable
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// fileError words an os error for the agent without leaking the runner's
// absolute paths.
func fileError(op, p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: no such file or directory", op, p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s %s: permission denied", op, p)
	case strings.Contains(err.Error(), "path escapes from parent"):
		return fmt.Errorf("%s %s: the path leaves the working directory (through a symlink)", op, p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %v", op, p, pe.Err)
	}
	return fmt.Errorf("%s %s: %v", op, p, err)
}
