package agents_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/test/fakellm"
)

func startFake(tb testing.TB, cfg fakellm.Config) *fakellm.Server {
	tb.Helper()
	s, err := fakellm.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Start(""); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// sleeps records the waits a ChatModel asked for instead of spending them.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func ptr[T any](v T) *T { return &v }

// modelCfg is an openai model config against the fake.
func modelCfg(f *fakellm.Server, model string) *task.ModelConfig {
	return &task.ModelConfig{Provider: task.ProviderOpenAI, Model: model, BaseURL: f.URL()}
}

// testOpts never sleeps and draws no jitter (waits are the floor d/2).
func testOpts(sl *sleeps) agents.Options {
	return agents.Options{Sleep: sl.sleep, Jitter: func() float64 { return 0 }}
}

func ctxT(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return ctx
}
