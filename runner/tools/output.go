package tools

import (
	"context"
	"sync"
)

// OutputSink holds the whole output a tool keeps beside the text the model
// sees (ExecuteTool sends it to the host in a trailer, which keeps it as the
// call's artifact).
type OutputSink struct {
	mu  sync.Mutex
	out []byte
}

type outputKey struct{}

// WithOutputSink returns ctx carrying a fresh sink for one call.
func WithOutputSink(ctx context.Context) (context.Context, *OutputSink) {
	s := &OutputSink{}
	return context.WithValue(ctx, outputKey{}, s), s
}

// KeepOutput records out as the call's whole output; without a sink in ctx
// (a tool called outside ExecuteTool) it does nothing.
func KeepOutput(ctx context.Context, out []byte) {
	if s, ok := ctx.Value(outputKey{}).(*OutputSink); ok {
		s.mu.Lock()
		s.out = out
		s.mu.Unlock()
	}
}

// Output is what the call kept (nil: nothing).
func (s *OutputSink) Output() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out
}
