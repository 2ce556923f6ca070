package grading

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"tolokaforge.io/operator/api/task"
)

// VerifierSite is where the runner lets a test_execution verifier run.
type VerifierSite struct {
	// Dir is a directory of the trial's own, outside every tool's root, under
	// which each grade builds the verifier's sandbox (and removes it after).
	Dir string
	// Env is what the verifier's environment carries beside the minimal set:
	// the runner's trial tag, so the trial's teardown also finds a process
	// that left the verifier's process group.
	Env []string
}

// verifierTestDir is the task's test directory (Terminal-Bench's tests/): the
// registered files under it reach the verifier as registered, whatever the
// agent did to its own copy.
const verifierTestDir = "tests"

// rewardFileKey is reward_file's path in a TrialSpec, for refusals.
const rewardFileKey = "task.grading.test_execution.reward_file"

// CheckTestExecution refuses, at RegisterTrial, a test_execution block the
// grade could only honour by reaching outside the verifier's sandbox: a
// reward_file with a ".." element (a file anywhere in the runner's
// filesystem), a NUL byte, or no file name at all. Nothing registered can be
// a symlink (initial_state.filesystem is written as regular files), so a
// symlink out can only appear at grade time, where the sandbox never follows
// one.
func CheckTestExecution(spec *task.TrialSpec) error {
	if spec == nil || spec.Task == nil || spec.Task.Grading == nil || spec.Task.Grading.TestExecution == nil {
		return nil
	}
	_, err := sandboxRewardPath(spec.Task.Grading.TestExecution.RewardFile)
	return err
}

// sandboxRewardPath resolves reward_file inside the verifier's sandbox, as a
// slash-separated path relative to its root: a relative name is relative to
// the root, and an absolute one is the same name under it, so upstream's
// /logs/verifier/reward.txt is <sandbox>/logs/verifier/reward.txt. "" is no
// reward file.
func sandboxRewardPath(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%s: %q contains a NUL byte", rewardFileKey, name)
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == ".." {
			return "", fmt.Errorf(`%s: %q leaves the verifier's sandbox through "..": name a file inside it `+
				`(an absolute path such as /logs/verifier/reward.txt is read as <sandbox>/logs/verifier/reward.txt)`, rewardFileKey, name)
		}
	}
	rel := path.Clean(strings.TrimLeft(name, "/"))
	if rel == "." || strings.HasSuffix(name, "/") {
		return "", fmt.Errorf("%s: %q names a directory, not a file", rewardFileKey, name)
	}
	return rel, nil
}

// sandbox is one grade's verifier directory: a copy of the agent's files with
// the task's test files laid over it as registered. Every file operation of
// the runner in it goes through root, so no symlink the agent planted takes
// a read, a write or a removal outside it.
type sandbox struct {
	dir  string
	root *os.Root
}

// newSandbox builds the verifier's sandbox under site.Dir: the agent's files
// from workDir (what the verifier judges), then the task's test files from
// the registered TaskDescription, replacing whatever the agent left at their
// paths (so a rewritten or deleted test is the task's again, and a file the
// agent added under tests/ is gone), then no reward file but its directory.
func newSandbox(site VerifierSite, workDir string, td *task.TaskDescription, argv []string, reward string) (_ *sandbox, err error) {
	if workDir == "" {
		return nil, errors.New("test_execution: the trial has no work directory to run the verifier in")
	}
	if site.Dir == "" {
		return nil, errors.New("test_execution: the trial has no verifier directory to build the verifier's sandbox in")
	}
	dir, err := os.MkdirTemp(site.Dir, "grade-")
	if err != nil {
		return nil, fmt.Errorf("test_execution: create the verifier's sandbox: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("test_execution: open the verifier's sandbox: %w", err)
	}
	sb := &sandbox{dir: dir, root: root}
	defer func() {
		if err != nil {
			sb.remove()
		}
	}()
	if err := copyTree(workDir, root); err != nil {
		return nil, fmt.Errorf("test_execution: copy the agent's files into the verifier's sandbox: %w", err)
	}
	if err := sb.placeTestFiles(registeredFiles(td), argv, rewardDirMap(td, reward, sb)); err != nil {
		return nil, fmt.Errorf("test_execution: lay the task's test files into the verifier's sandbox: %w", err)
	}
	if reward != "" {
		// Only the verifier's own verdict counts: a reward file the agent left
		// would otherwise grade the trial.
		if err := sb.realDirs(path.Dir(reward)); err != nil {
			return nil, fmt.Errorf("test_execution: create the reward file's directory %s: %w", path.Dir(reward), err)
		}
		if err := root.RemoveAll(reward); err != nil {
			return nil, fmt.Errorf("test_execution: remove the reward file %s the agent left: %w", reward, err)
		}
	}
	return sb, nil
}

// remove deletes the sandbox: a regrade builds its own, and the agent's copy
// would otherwise double the trial's disk until cleanup.
func (sb *sandbox) remove() {
	_ = sb.root.Close()
	_ = os.RemoveAll(sb.dir)
}

func registeredFiles(td *task.TaskDescription) map[string]string {
	if td == nil || td.InitialState == nil {
		return nil
	}
	return td.InitialState.Filesystem
}

// testFiles picks the registered files the verifier gets as registered: every
// one under tests/, and every one the verifier command names (its script,
// wherever it lives). Only these: the rest of initial_state.filesystem is the
// agent's starting point, and the verifier judges what the agent made of it.
// replaced says whether tests/ is replaced whole.
func testFiles(registered map[string]string, argv []string) (files []string, replaced bool) {
	named := map[string]bool{}
	for _, a := range argv {
		if a != "" && !strings.HasPrefix(a, "/") {
			named[path.Clean(a)] = true
		}
	}
	for name := range registered {
		rel := path.Clean(name)
		under := strings.HasPrefix(rel, verifierTestDir+"/")
		replaced = replaced || under
		if under || named[rel] {
			files = append(files, rel)
		}
	}
	sort.Strings(files)
	return files, replaced
}

// rewardDirMap maps the absolute reward directory an upstream verifier
// writes (Terminal-Bench's /logs/verifier) to its place in this sandbox, so
// an unmodified script writes its verdict where the runner reads it. Without
// the map such a script would write the machine's real /logs (shared by every
// trial) and the runner, finding no reward in the sandbox, would fall back to
// the exit code: a verifier that wrote 0 and exited 0 would score 1.
func rewardDirMap(td *task.TaskDescription, reward string, sb *sandbox) *strings.Replacer {
	if td == nil || td.Grading == nil || td.Grading.TestExecution == nil || reward == "" {
		return nil
	}
	name := td.Grading.TestExecution.RewardFile
	if !strings.HasPrefix(name, "/") {
		return nil
	}
	from := path.Dir(path.Clean(name))
	if from == "/" {
		return nil
	}
	return strings.NewReplacer(from, sb.abs(path.Dir(reward)))
}

func (sb *sandbox) placeTestFiles(registered map[string]string, argv []string, rewardDir *strings.Replacer) error {
	files, replaced := testFiles(registered, argv)
	if replaced {
		if err := sb.root.RemoveAll(verifierTestDir); err != nil {
			return fmt.Errorf("remove the agent's %s/: %w", verifierTestDir, err)
		}
	}
	content := make(map[string]string, len(registered))
	for name, data := range registered {
		content[path.Clean(name)] = data
	}
	for _, rel := range files {
		if err := sb.realDirs(path.Dir(rel)); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if err := sb.root.RemoveAll(rel); err != nil {
			return fmt.Errorf("%s: remove the agent's copy: %w", rel, err)
		}
		data := content[rel]
		if rewardDir != nil {
			data = rewardDir.Replace(data)
		}
		// The mode provision gives the registered files.
		if err := sb.root.WriteFile(rel, []byte(data), 0o644); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
	}
	return nil
}

// realDirs makes every element of dir (slash-separated, relative) a real
// directory of the sandbox: a symlink or a file the agent left in the way is
// removed, never followed, so what is written below lands in the sandbox.
func (sb *sandbox) realDirs(dir string) error {
	if dir == "." {
		return nil
	}
	p := ""
	for _, elem := range strings.Split(dir, "/") {
		p = path.Join(p, elem)
		fi, err := sb.root.Lstat(p)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			if err := sb.root.RemoveAll(p); err != nil {
				return err
			}
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if err := sb.root.Mkdir(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies src's directories, regular files (with their permission
// bits) and symlinks (as links, never followed) into dst. Anything else (a
// FIFO, a socket, a device) is no work a verifier reads, and opening a FIFO
// would block. A file that vanishes mid-copy (a process of the agent's still
// running) is skipped.
func copyTree(src string, dst *os.Root) error {
	from, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer func() { _ = from.Close() }()
	return fs.WalkDir(from.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if name == "." {
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir():
			return dst.Mkdir(name, 0o755)
		case t&fs.ModeSymlink != 0:
			target, err := from.Readlink(name)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			return dst.Symlink(target, name)
		case t.IsRegular():
			return copyFile(from, dst, name)
		}
		return nil
	})
}

func copyFile(from, dst *os.Root, name string) error {
	// O_NONBLOCK: a file swapped for a FIFO since the listing must not hang
	// the grade; the type is checked on the open file.
	in, err := from.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	out, err := dst.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	// The umask may have narrowed the mode; the agent's executable bits are its work.
	return dst.Chmod(name, fi.Mode().Perm())
}

// abs is rel (slash-separated) as a path of the runner's filesystem.
func (sb *sandbox) abs(rel string) string { return filepath.Join(sb.dir, filepath.FromSlash(rel)) }
