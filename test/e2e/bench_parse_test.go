package e2e

import (
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
