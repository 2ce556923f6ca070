package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// roleJudge labels the calls the gateway forwards: only judges call it.
const roleJudge = "judge"

// meter records one forwarded call into the LLM series, as api/llm's
// client records its own: by model, provider host and role, never by Trial.
type meter struct {
	m             *llm.Metrics
	model, server string
	pricing       *task.Pricing
	sent          time.Time
	recorded      bool
}

func (g *Gateway) meter(model, baseURL string, p *evalv1.Pricing) *meter {
	m := g.Metrics
	if m == nil {
		m = llm.DefaultMetrics
	}
	var pricing *task.Pricing
	if p != nil {
		pricing = &task.Pricing{InputUSDPerMTok: p.InputUSDPerMTok, OutputUSDPerMTok: p.OutputUSDPerMTok, CachedInputUSDPerMTok: p.CachedInputUSDPerMTok}
	}
	return &meter{m: m, model: model, server: llm.ServerAddress(baseURL), pricing: pricing, sent: time.Now()}
}

// response counts the provider's answer. A success's body is read here to
// take its usage and handed on unchanged; one larger than a request may be
// is passed through unread (no tokens counted rather than a cut answer).
func (mt *meter) response(resp *http.Response) error {
	mt.recorded = true
	outcome := llm.StatusOutcome(resp.StatusCode)
	if outcome != llm.OutcomeOK {
		mt.m.Proxied(mt.model, mt.server, roleJudge, outcome, time.Since(mt.sent), nil, nil)
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		mt.m.Proxied(mt.model, mt.server, roleJudge, llm.OutcomeTransport, time.Since(mt.sent), nil, nil)
		return err
	}
	if len(b) > maxBody {
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
		mt.m.Proxied(mt.model, mt.server, roleJudge, outcome, time.Since(mt.sent), nil, nil)
		return nil
	}
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	plain := b
	// The judge's client asked for gzip itself, so the answer may come
	// compressed through the proxy: decompress a copy to read the usage.
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
			plain, _ = io.ReadAll(io.LimitReader(zr, maxBody))
		}
	}
	mt.m.Proxied(mt.model, mt.server, roleJudge, outcome, time.Since(mt.sent), plain, mt.pricing)
	return nil
}

// failed counts a call that got no usable answer.
func (mt *meter) failed(ctx context.Context, err error) {
	if mt.recorded {
		return
	}
	outcome := llm.OutcomeTransport
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		outcome = llm.OutcomeCanceled
	case errors.As(err, &ne) && ne.Timeout():
		outcome = llm.OutcomeTimeout
	}
	mt.m.Proxied(mt.model, mt.server, roleJudge, outcome, time.Since(mt.sent), nil, nil)
}

type readCloser struct {
	io.Reader
	io.Closer
}
