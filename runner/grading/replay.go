package grading

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"tolokaforge.io/operator/api/task"
)

// snapshotName holds the agent's state while the golden path runs. The DB service
// replaces an existing snapshot of the same name, so re-grading a trial works.
const snapshotName = "pre_golden"

// goldenOutcome is the end of a golden replay.
type goldenOutcome struct {
	hash  string
	state *stableState // the golden stable state, when the caller asked for it
}

// replayGolden runs the golden path on the initial state and puts the trial's state back
// on every path out: snapshot pre_golden, reset, push to the tool servers, replay each
// action through Env.Replay (never recorded), sync, golden stable hash (and the golden
// state when wantState says so), then restore pre_golden and push it to the tool
// servers — after failures, cancellation and panics too. A golden action that ends in
// any status but SUCCESS fails the grade: a grade built on a golden state that never
// happened is worse than none.
func replayGolden(ctx context.Context, g *gradeCtx, actions []task.GoldenAction, wantState func(goldenHash string) bool) (out goldenOutcome, err error) {
	ctx, end := startUnit(ctx, g.env, UnitGoldenReplay)
	// Deferred first, so it runs last: the restore is part of the replay's time.
	defer func() { end(true, err) }()
	db := g.env.DB()
	if _, err := db.Snapshot(ctx, g.id, snapshotName); err != nil {
		return out, hashFailed("SnapshotError: snapshotting the trial's state as "+snapshotName, err)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = goldenOutcome{}, hashFailed(fmt.Sprintf("GoldenReplayPanic: %v", r), nil)
		}
		if rerr := restorePreGolden(ctx, g); rerr != nil {
			out, err = goldenOutcome{}, joinHashFailures(err, rerr)
		}
	}()

	rctx, cancel := context.WithTimeout(ctx, g.opts.replayBound)
	defer cancel()
	if _, err := db.Reset(rctx, g.id); err != nil {
		return out, hashFailed("ResetError: resetting the trial to its initial state for golden replay", err)
	}
	if err := g.env.PushToTools(rctx); err != nil {
		return out, hashFailed("StateSyncError: loading the initial state into the tool servers", err)
	}
	for i, a := range actions {
		args := a.Arguments
		if len(args) == 0 {
			args = []byte("{}")
		}
		status, output, err := g.env.Replay(rctx, g.golden[i], args)
		if err != nil {
			return out, hashFailed(fmt.Sprintf("GoldenReplayError: action %d (%s)", i, a.ToolName), err)
		}
		if status != task.ToolCallSuccess {
			return out, hashFailed(fmt.Sprintf("GoldReplayIncomplete: action %d (%s): %s", i, a.ToolName, outcomeMessage(status, output)), nil)
		}
	}
	if err := g.env.SyncFromTools(rctx); err != nil {
		return out, hashFailed("StateSyncError: writing the tool servers' golden tables into the DB service", err)
	}
	h, err := db.Hash(rctx, g.id)
	if err != nil {
		return out, hashFailed("StableHashError: hashing the golden state", err)
	}
	out.hash = h.StableHash
	if wantState(out.hash) {
		if out.state, err = readStableState(rctx, g.env, "golden"); err != nil {
			return goldenOutcome{}, err
		}
	}
	return out, nil
}

func outcomeMessage(status task.ToolCallStatus, output string) string {
	if strings.TrimSpace(output) == "" {
		return fmt.Sprintf("status %s with no message", status)
	}
	return fmt.Sprintf("status %s: %s", status, output)
}

// restorePreGolden puts the agent's state back. It runs on a context detached from the
// caller's cancellation (bounded by the restore timeout): a cancelled or failed grade
// must still leave the trial as the agent left it.
func restorePreGolden(ctx context.Context, g *gradeCtx) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.restoreTimeout)
	defer cancel()
	db := g.env.DB()
	if _, err := db.Restore(rctx, g.id, snapshotName); err != nil {
		g.opts.log.Error(err, "restoring pre_golden failed; the trial's database may hold the golden state", "trial", g.id)
		return hashFailed("RestoreError: restoring "+snapshotName+" (the trial's database may hold the golden state)", err)
	}
	if err := g.env.PushToTools(rctx); err != nil {
		return hashFailed("StateSyncError: loading the restored state into the tool servers", err)
	}
	if err := db.DeleteSnapshot(rctx, g.id, snapshotName); err != nil {
		// The state is back; a leftover snapshot only costs memory and is replaced
		// by the next grade.
		g.opts.log.V(1).Info("deleting the pre_golden snapshot failed", "trial", g.id, "error", err.Error())
	}
	return nil
}

// joinHashFailures reports a replay failure and the restore failure that followed it in
// one "Hash grading failed: ..." message.
func joinHashFailures(first, restore error) error {
	if first == nil {
		return restore
	}
	return &Error{
		Msg:   first.Error() + "; then " + strings.TrimPrefix(restore.Error(), "Hash grading failed: "),
		Cause: errors.Join(first, restore),
	}
}
