package fakellm

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkRoundTrip reports a fakellm round trip as a ratio to a bare
// net/http handler answering a canned body over the same loopback, so the
// figure survives a noisy shared machine.
func BenchmarkRoundTrip(b *testing.B) {
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"You are a shop assistant."},{"role":"user","content":"Is A1 in stock?"}],"tools":[{"type":"function","function":{"name":"get_stock","parameters":{"type":"object"}}}]}`)
	canned := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	baseline := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(canned)
	}))
	defer baseline.Close()
	s, err := New(Config{Responder: func(Request) Reply { return Reply{Content: "ok"} }})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(""); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()

	hc := &http.Client{}
	do := func(url string) {
		resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.ResetTimer()
	var base, fake time.Duration
	for range b.N {
		t0 := time.Now()
		do(baseline.URL)
		t1 := time.Now()
		do(s.URL() + "/chat/completions")
		base += t1.Sub(t0)
		fake += time.Since(t1)
	}
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "baseline-ns/op")
	b.ReportMetric(float64(fake.Nanoseconds())/float64(b.N), "fakellm-ns/op")
	b.ReportMetric(float64(fake)/float64(base), "fakellm/baseline")
}
