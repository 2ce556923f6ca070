package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/client"
	"tolokaforge.io/operator/runner/grading"
)

// StackConfig configures the in-process services.
type StackConfig struct {
	// SelfExecutable resolves "tolokaforge" in MCP commands (default
	// os.Executable()).
	SelfExecutable string
	// WorkDir holds the runner's per-trial directories (default a fresh
	// temporary directory, removed by Stop).
	WorkDir string
	// MinEngineProtocol is the runner's version lock (0: the runner's default).
	MinEngineProtocol int32
	// ReadyTimeout bounds the wait for the runner's health (default 30s).
	ReadyTimeout time.Duration
	// SecretsDir is where the runner's judge reads its key file (TrialSpec.judge
	// .api_key_env names a file in it), as the runner pod's --secrets-dir; empty keeps
	// the grader's default.
	SecretsDir string
	Log        logr.Logger
}

// Stack is a DB service and a runner served on loopback, with a client
// connected to the runner.
type Stack struct {
	DBServiceURL string
	RunnerAddr   string
	Runner       *client.Client
	// Token is the stack's credential: the runner and the DB service refuse
	// calls without it (Runner already sends it).
	Token string

	stopOnce sync.Once
	stop     func() error
	stopErr  error
}

// StartStack serves a DB service and a runner (with the grading engine) on
// 127.0.0.1 ports the kernel picks, and waits until the runner is SERVING.
// Stop ends both and waits for them.
func StartStack(ctx context.Context, cfg StackConfig) (*Stack, error) {
	log := cfg.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	if cfg.SelfExecutable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("start stack: resolve own executable: %w", err)
		}
		cfg.SelfExecutable = exe
	}
	removeWork := false
	if cfg.WorkDir == "" {
		dir, err := os.MkdirTemp("", "tolokaforge-trial-")
		if err != nil {
			return nil, fmt.Errorf("start stack: %w", err)
		}
		cfg.WorkDir, removeWork = dir, true
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}

	life, end := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	fail := func(err error) (*Stack, error) {
		end()
		wg.Wait()
		if removeWork {
			_ = os.RemoveAll(cfg.WorkDir)
		}
		return nil, err
	}

	// The in-process stack authenticates like a cluster attempt does (a
	// fresh token, held in memory only), so `trial run` exercises the same
	// code path and other local users cannot drive its loopback ports.
	token, err := authn.NewToken()
	if err != nil {
		return fail(fmt.Errorf("start stack: %w", err))
	}
	dbLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(fmt.Errorf("start stack: DB service listen: %w", err))
	}
	db := dbservice.New(dbservice.Options{Logger: log.WithName("dbservice"), AuthToken: token})
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := db.Serve(life, dbLn); err != nil {
			errs <- fmt.Errorf("DB service: %w", err)
		}
	}()
	dbURL := "http://" + dbLn.Addr().String()

	gradingOpts := []grading.Option{grading.WithLogger(log.WithName("grading"))}
	if cfg.SecretsDir != "" {
		gradingOpts = append(gradingOpts, grading.WithSecretsDir(cfg.SecretsDir))
	}
	srv, err := runner.New(runner.Config{
		DBServiceURL:      dbURL,
		MinEngineProtocol: cfg.MinEngineProtocol,
		WorkDir:           cfg.WorkDir,
		SelfExecutable:    cfg.SelfExecutable,
		Grader:            grading.New(gradingOpts...),
		Version:           "local",
		Logger:            log.WithName("runner"),
		AuthToken:         token,
	})
	if err != nil {
		return fail(fmt.Errorf("start stack: %w", err))
	}
	rLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(fmt.Errorf("start stack: runner listen: %w", err))
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(life, rLn); err != nil {
			errs <- fmt.Errorf("runner: %w", err)
		}
	}()
	addr := rLn.Addr().String()
	c, err := client.Dial(ctx, addr, client.WithToken(token))
	if err != nil {
		return fail(fmt.Errorf("start stack: %w", err))
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancel()
	if err := c.WaitReady(wctx); err != nil {
		_ = c.Close()
		return fail(fmt.Errorf("start stack: %w", err))
	}
	s := &Stack{DBServiceURL: dbURL, RunnerAddr: addr, Runner: c, Token: token}
	s.stop = func() error {
		cerr := c.Close()
		end()
		wg.Wait()
		close(errs)
		var all []error
		for e := range errs {
			all = append(all, e)
		}
		if removeWork {
			if err := os.RemoveAll(cfg.WorkDir); err != nil {
				all = append(all, err)
			}
		}
		if cerr != nil {
			all = append(all, fmt.Errorf("close runner client: %w", cerr))
		}
		return errors.Join(all...)
	}
	return s, nil
}

// Stop shuts the runner (which cleans up its trials) and the DB service
// down and waits for them. Safe to call more than once.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}
