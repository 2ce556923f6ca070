package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/proc"
)

// maxNamed bounds how many leftovers of one kind a baseline message names.
const maxNamed = 8

// baseline says what keeps a slot's runner from its baseline once trial id
// is cleaned up (nil: back to it), one phrase per kind of leftover:
//
//   - a live process below the runner that belongs to no other trial still
//     registered (or being registered or cleaned up): the runner is the
//     subreaper (PID 1 in a pod), so whatever a tool left, whatever session
//     or environment it took, is below it; a process belongs to a trial when
//     it or its nearest ancestor carried the trial's tag when first seen;
//   - an entry of the work directory that is no such trial's folder;
//   - with no other trial left, anything in the temp directory;
//   - the trial still held by its DB service (db nil: no DB to ask).
//
// It reads; it kills and removes nothing: a slot that is not clean is
// replaced, not repaired.
func (s *Server) baseline(ctx context.Context, id string, db *client.Client) []string {
	owned := s.ownedDirs(id)
	var out []string

	if procs, err := strays(owned); err != nil {
		out = append(out, fmt.Sprintf("the processes below the runner cannot be listed: %v", err))
	} else if len(procs) > 0 {
		names := make([]string, len(procs))
		for i, p := range procs {
			names[i] = fmt.Sprintf("%d (%s)", p.PID, p.Comm)
		}
		what := "1 process below the runner belongs"
		if len(procs) > 1 {
			what = fmt.Sprintf("%d processes below the runner belong", len(procs))
		}
		out = append(out, fmt.Sprintf("%s to no registered trial: %s", what, named(names)))
	}

	work := filepath.Clean(s.cfg.WorkDir)
	if names, err := unowned(work, owned); err != nil {
		out = append(out, fmt.Sprintf("the work directory %s cannot be listed: %v", work, err))
	} else if len(names) > 0 {
		out = append(out, fmt.Sprintf("the work directory %s holds what no registered trial owns: %s", work, named(names)))
	}

	// With the work directory in the temp directory (the default) the check
	// above already read it.
	if tmp := filepath.Clean(s.cfg.TempDir); len(owned) == 0 && tmp != work {
		if names, err := unowned(tmp, nil); err != nil {
			out = append(out, fmt.Sprintf("the temp directory %s cannot be listed: %v", tmp, err))
		} else if len(names) > 0 {
			out = append(out, fmt.Sprintf("the temp directory %s is not empty with no trial registered: %s", tmp, named(names)))
		}
	}

	if db != nil {
		_, err := db.Hash(ctx, id)
		switch {
		case err == nil:
			out = append(out, fmt.Sprintf("the DB service still holds trial '%s'", id))
		case !errors.Is(err, client.ErrTrialNotFound):
			out = append(out, fmt.Sprintf("the DB service did not say whether it still holds trial '%s': %v", id, err))
		}
	}
	return out
}

// strayRecheck is how long a process that looks like a stray is given to
// stop being one before the strays are read again and reported: a process a
// runner goroutine just forked for another trial has the runner's
// environment, without any tag, until it execs, and a process just killed
// may not have exited yet.
const strayRecheck = 250 * time.Millisecond

// strays are the live processes below the runner that no owned folder's
// trial owns: those of a second scan strayRecheck after a first that found
// any. The second scan's, whoever they are: a stray that keeps forking and
// exiting has another pid each time, and is still one.
func strays(owned map[string]struct{}) ([]proc.Process, error) {
	scan := func() ([]proc.Process, error) {
		procs, err := proc.Below(trialTagKey)
		if err != nil {
			return nil, err
		}
		var out []proc.Process
		for _, p := range procs {
			if _, ok := owned[p.Owner]; !ok || p.Owner == "" {
				out = append(out, p)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
		return out, nil
	}
	first, err := scan()
	if err != nil || len(first) == 0 {
		return nil, err
	}
	time.Sleep(strayRecheck)
	return scan()
}

// ownedDirs are the folders of every trial registered, being registered or
// being cleaned up, except id's.
func (s *Server) ownedDirs(id string) map[string]struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]struct{}{}
	for tid, t := range s.trials {
		if tid != id && t.dir != "" {
			out[filepath.Clean(t.dir)] = struct{}{}
		}
	}
	for tid, dir := range s.pendingDirs {
		if tid != id && dir != "" {
			out[filepath.Clean(dir)] = struct{}{}
		}
	}
	return out
}

// unowned lists dir's entries whose path is not in owned, sorted; a missing
// dir holds nothing.
func unowned(dir string, owned map[string]struct{}) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if _, ok := owned[filepath.Join(dir, e.Name())]; !ok {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// notBaseline is the phrase a failed check answers with.
func notBaseline(remained []string) string {
	return "the slot is not back to its baseline: " + strings.Join(remained, "; ")
}

// named lists up to maxNamed names and says how many more there are.
func named(names []string) string {
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}
