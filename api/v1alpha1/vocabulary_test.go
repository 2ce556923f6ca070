package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("t", 70)
	cases := []struct {
		in       string
		want     string
		prefixed string
	}{
		{in: "shop", want: "shop"},
		{in: "shop.v2", want: "shop.v2"},
		{in: strings.Repeat("a", 63), want: strings.Repeat("a", 63)},
		{in: long, prefixed: strings.Repeat("t", 52) + "-"},
		{in: strings.Repeat("u", 51) + "-.-" + strings.Repeat("v", 20), prefixed: strings.Repeat("u", 51) + "-"},
		// pack task ids and categories carry characters labels refuse
		{in: "tau/retail:task 7", prefixed: "tau_retail_task_7-"},
		{in: "", want: ""},
	}
	for _, tc := range cases {
		got := LabelValue(tc.in)
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Fatalf("LabelValue(%q) = %q is not a label value: %v", tc.in, got, errs)
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if tc.prefixed != "" && (!strings.HasPrefix(got, tc.prefixed) || len(got) != len(tc.prefixed)+labelHashLen) {
			t.Errorf("LabelValue(%q) = %q, want %q + %d hex digits", tc.in, got, tc.prefixed, labelHashLen)
		}
	}
	if LabelValue(long+"a") == LabelValue(long+"b") {
		t.Fatal("two long values share a label value")
	}
}
