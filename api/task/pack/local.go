package pack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/runner"
	runnerclient "tolokaforge.io/operator/runner/client"
	"tolokaforge.io/operator/runner/grading"
)

// LocalOptions configure the in-process stack validation runs on.
type LocalOptions struct {
	// SelfExecutable replaces argv[0] "tolokaforge" of MCP server commands
	// (default: this process's executable, the tolokaforge binary).
	SelfExecutable string
	// WorkDir holds the runner's per-trial directories (default: a
	// temporary directory removed on Close).
	WorkDir string
	// ArtifactsDir, when set, receives each trial's artifacts.
	ArtifactsDir string
	// TrialTimeout bounds one task's trial (default 2 minutes).
	TrialTimeout time.Duration
	Log          logr.Logger
}

// Local is a DB service and a runner on loopback, driven by the host's own
// attempt loop: the same path a trial takes on a cluster, minus the pods.
type Local struct {
	opts    LocalOptions
	dbURL   string
	client  *runnerclient.Client
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	errs    chan error
	tempDir string
}

// StartLocal starts the stack; Close stops it.
func StartLocal(ctx context.Context, opts LocalOptions) (*Local, error) {
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.TrialTimeout <= 0 {
		opts.TrialTimeout = 2 * time.Minute
	}
	l := &Local{opts: opts, errs: make(chan error, 2)}
	if l.opts.WorkDir == "" {
		dir, err := os.MkdirTemp("", "tolokaforge-pack-validate-")
		if err != nil {
			return nil, fmt.Errorf("local stack: %w", err)
		}
		l.tempDir, l.opts.WorkDir = dir, dir
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel

	dbLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("local stack: listen for the DB service: %w", err)
	}
	db := dbservice.New(dbservice.Options{Logger: opts.Log.WithName("dbservice")})
	l.serve(func() error { return db.Serve(sctx, dbLis) })
	l.dbURL = "http://" + dbLis.Addr().String()

	rs, err := runner.New(runner.Config{
		DBServiceURL:   l.dbURL,
		WorkDir:        l.opts.WorkDir,
		SelfExecutable: opts.SelfExecutable,
		Grader:         grading.New(),
		Logger:         opts.Log.WithName("runner"),
		HTTPClient:     &http.Client{Timeout: time.Minute},
	})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("local stack: %w", err)
	}
	rLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("local stack: listen for the runner: %w", err)
	}
	l.serve(func() error { return rs.Serve(sctx, rLis) })
	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	defer dcancel()
	c, err := runnerclient.Dial(dctx, rLis.Addr().String())
	if err == nil {
		err = c.WaitReady(dctx)
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("local stack: connect to the runner: %w", err)
	}
	l.client = c
	return l, nil
}

func (l *Local) serve(f func() error) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if err := f(); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, http.ErrServerClosed) {
			l.errs <- err
		}
	}()
}

// Close stops the stack and removes its temporary directory.
func (l *Local) Close() {
	if l.client != nil {
		_ = l.client.Close()
	}
	if l.cancel != nil {
		l.cancel()
	}
	l.wg.Wait()
	if l.tempDir != "" {
		_ = os.RemoveAll(l.tempDir)
	}
}

// RunOracle runs one trial of desc with the oracle agent and the task's
// default user (its scripted flow, else the initial user message then
// ###STOP###).
func (l *Local) RunOracle(ctx context.Context, desc *task.TaskDescription, initialUserMessage string, maxTurns int, trialIndex int) host.AttemptResult {
	spec := &task.TrialSpec{
		TrialID:      fmt.Sprintf("%s:%d", desc.TaskID, trialIndex),
		RunID:        "pack-validate",
		AttemptID:    fmt.Sprintf("pack-validate-%s-%d", desc.TaskID, trialIndex),
		Task:         desc,
		Agent:        &task.ModelConfig{Provider: task.ProviderOracle},
		EnvEndpoints: &task.EnvEndpoints{DBServiceURL: l.dbURL},
	}
	return host.RunAttempt(ctx, host.AttemptConfig{
		Runner:             l.client,
		Spec:               spec,
		InitialUserMessage: initialUserMessage,
		MaxTurns:           maxTurns,
		TrialTimeout:       l.opts.TrialTimeout,
		Agent:              agents.NewOracle(desc),
		ArtifactsDir:       l.opts.ArtifactsDir,
		TrialIndex:         trialIndex,
		AttemptNumber:      1,
		Log:                l.opts.Log.WithName("host"),
	})
}
