package e2e

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func TestParseAPIWrites(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]float64
	}{
		{"writing verbs by resource and subresource",
			`# HELP apiserver_request_total x
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 12
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 30
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="DELETE",version="v1"} 4
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="trials",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 7.5
`, map[string]float64{"pods": 19, "pods/status": 30, "trials/status": 7.5}},
		{"reads and other metrics are not writes",
			`apiserver_request_total{resource="pods",subresource="",verb="GET"} 100
apiserver_request_total{resource="pods",subresource="",verb="WATCH"} 9
apiserver_request_total{resource="pods",subresource="",verb="LIST"} 9
apiserver_request_duration_seconds_count{resource="pods",subresource="",verb="POST"} 9
`, map[string]float64{}},
		{"an unparsable value is skipped", `apiserver_request_total{resource="pods",verb="POST"} x`, map[string]float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseAPIWrites(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseAPIWrites = %v, want %v", got, tc.want)
			}
		})
	}
}

func FuzzParseAPIWrites(f *testing.F) {
	f.Add(`apiserver_request_total{resource="pods",subresource="status",verb="PATCH"} 3`)
	f.Add(`apiserver_request_total{verb="POST"}`)
	f.Add(`apiserver_request_total{`)
	f.Add("}{apiserver_request_total{\n")
	f.Fuzz(func(t *testing.T, in string) {
		for res, v := range parseAPIWrites(in) {
			if v != v { // NaN would poison every sum
				t.Fatalf("%s: NaN from %q", res, in)
			}
		}
	})
}

func TestPercentile(t *testing.T) {
	s := func(ms ...int) []time.Duration {
		var out []time.Duration
		for _, m := range ms {
			out = append(out, time.Duration(m)*time.Millisecond)
		}
		return out
	}
	for _, tc := range []struct {
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{s(5), 0.95, 5 * time.Millisecond},
		{s(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{s(10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20), 0.95, 19 * time.Millisecond},
		{s(10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20), 0.5, 10 * time.Millisecond},
	} {
		if got := percentile(tc.in, tc.q); got != tc.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tc.in, tc.q, got, tc.want)
		}
	}
}

func TestAttemptStartHistogram(t *testing.T) {
	const a = `# TYPE tolokaforge_attempt_start_seconds histogram
tolokaforge_attempt_start_seconds_bucket{le="0.1"} 2
tolokaforge_attempt_start_seconds_bucket{le="0.5"} 6
tolokaforge_attempt_start_seconds_bucket{le="1"} 8
tolokaforge_attempt_start_seconds_bucket{le="+Inf"} 10
tolokaforge_attempt_start_seconds_sum 9
tolokaforge_attempt_start_seconds_count 10
`
	const b = `# TYPE tolokaforge_attempt_start_seconds histogram
tolokaforge_attempt_start_seconds_bucket{le="0.1"} 0
tolokaforge_attempt_start_seconds_bucket{le="0.5"} 2
tolokaforge_attempt_start_seconds_bucket{le="1"} 2
tolokaforge_attempt_start_seconds_bucket{le="+Inf"} 2
tolokaforge_attempt_start_seconds_sum 0.6
tolokaforge_attempt_start_seconds_count 2
`
	both, err := parseHistogram(attemptStartMetric, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if both.count != 12 {
		t.Fatalf("count = %v, want 12 (two managers summed)", both.count)
	}
	for _, tc := range []struct {
		name string
		h    histogram
		q    float64
		want float64
	}{
		// 12 observations: rank 6 falls in (0.1, 0.5], which holds 6 of
		// them above the 2 at or below 0.1: 0.1 + 0.4*(6-2)/6.
		{"p50 of both managers", both, 0.5, 0.1 + 0.4*4/6},
		// Only the second scrape's new observations: 10 less 0 and the
		// deltas per bucket.
		{"a phase's delta", both.minus(histogram{bounds: both.bounds, cum: []float64{2, 6, 8, 10}, count: 10}), 0.5, 0.1 + 0.4*1/2},
		{"p95 in the +Inf bucket is the last finite bound", both, 0.99, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
	if got := (histogram{}).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("quantile of no observations = %v, want NaN", got)
	}
	if _, err := parseHistogram(attemptStartMetric, "garbage{"); err == nil {
		t.Error("a malformed exposition parsed")
	}
	none, err := parseHistogram(attemptStartMetric, "# no such metric\nother_total 1\n")
	if err != nil || none.count != 0 {
		t.Errorf("absent metric: %+v, %v", none, err)
	}
}
