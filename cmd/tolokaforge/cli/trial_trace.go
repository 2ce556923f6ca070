package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/telemetry"
	"tolokaforge.io/operator/controllers/host"
)

// traceFile is the attempt's trace, beside trajectory.yaml.
const traceFile = "trace.json"

// traceService is the service.name of trial run's spans.
const traceService = "tolokaforge-trial-run"

// runTracer is --trace: one tracer provider for the run's host and runner,
// exporting each span as it ends into memory, from where each attempt's
// trace is written out and forgotten.
type runTracer struct {
	tp  *sdktrace.TracerProvider
	rec *telemetry.Recorder
}

func newRunTracer(ctx context.Context) (*runTracer, error) {
	rec := &telemetry.Recorder{}
	tp, err := telemetry.RecordingProvider(ctx, traceService, rec)
	if err != nil {
		return nil, err
	}
	return &runTracer{tp: tp, rec: rec}, nil
}

// provider is the run's tracer provider; nil (untraced) without --trace.
func (t *runTracer) provider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.tp
}

func (t *runTracer) stop(log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		log.Error(err, "stop the trace recorder")
	}
}

// writeTrace writes res's trace as OTLP JSON into the attempt's directory
// and the trial's, as the other artifacts are. Every span of the attempt
// has ended when RunAttempt returns (the runner's server spans end before
// their replies) and was exported as it ended. Without --trace, the
// trial's copy of an earlier traced attempt goes: it would not match the
// trajectory beside it.
func writeTrace(ctx context.Context, env trialEnv, sink artifacts.Sink, t *runTracer, p *preparedTrial, res *host.AttemptResult) {
	top := artifacts.RelDir(p.spec.Task.TaskID, p.index)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if t == nil || res.TraceID == "" || res.ArtifactsError != nil {
		if err := sink.Delete(wctx, top+"/"+traceFile); err != nil {
			env.Log.Error(err, "remove an earlier attempt's trace")
		}
		return
	}
	defer t.rec.Forget(res.TraceID)
	err := func() error {
		td, err := t.rec.Trace(res.TraceID)
		if err != nil {
			return err
		}
		b, err := telemetry.MarshalJSON(td)
		if err != nil {
			return err
		}
		for _, dir := range []string{top + "/attempts/" + strconv.Itoa(p.attempt), top} {
			if err := sink.Put(wctx, dir+"/"+traceFile, b); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		fmt.Fprintf(env.Stdout, "trace not written: %v\n", err)
		return
	}
	fmt.Fprintf(env.Stdout, "trace %s: %s\n", res.TraceID, sink.Location(top+"/"+traceFile))
}
