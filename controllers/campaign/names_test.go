package campaign

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestTrialName(t *testing.T) {
	long := strings.Repeat("c", 40)
	cases := []struct {
		name                   string
		campaign, agent, task  string
		index                  int32
		want                   string // exact, when set
		wantPrefix, wantSuffix string
	}{
		{name: "plain", campaign: "eval", agent: "oracle", task: "shop", index: 3, want: "eval-oracle-shop-3"},
		{name: "exactly 63 stays plain", campaign: strings.Repeat("a", 48), agent: "ag", task: "task", index: 12,
			want: strings.Repeat("a", 48) + "-ag-task-12"},
		{name: "64 is shortened", campaign: strings.Repeat("a", 49), agent: "ag", task: "task", index: 12,
			wantPrefix: strings.Repeat("a", 49) + "-", wantSuffix: "-12"},
		{name: "long task", campaign: "eval", agent: "gpt-4o", task: long, index: 999,
			wantPrefix: "eval-gpt-4o-ccc", wantSuffix: "-999"},
		{name: "truncation never leaves a dangling hyphen", campaign: strings.Repeat("b", 49) + "-" + strings.Repeat("x", 20), agent: "a", task: "t", index: 7,
			wantPrefix: strings.Repeat("b", 49) + "-", wantSuffix: "-7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := TrialName(tc.campaign, tc.agent, tc.task, tc.index)
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Fatalf("%q is not a DNS-1123 label: %v", got, errs)
			}
			if tc.want != "" {
				if got != tc.want {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
				return
			}
			if len(got) > maxTrialNameLength || !strings.HasPrefix(got, tc.wantPrefix) || !strings.HasSuffix(got, tc.wantSuffix) {
				t.Fatalf("got %q (len %d), want prefix %q and suffix %q within 63", got, len(got), tc.wantPrefix, tc.wantSuffix)
			}
			if strings.Contains(got, "--") || strings.Contains(got, "-x") && tc.index == 7 {
				t.Fatalf("got %q with a dangling hyphen before the hash", got)
			}
			if again := TrialName(tc.campaign, tc.agent, tc.task, tc.index); again != got {
				t.Fatalf("not deterministic: %q then %q", got, again)
			}
		})
	}
}

func TestTrialNameShortenedNamesStayDistinct(t *testing.T) {
	long := strings.Repeat("x", 60)
	seen := map[string]string{}
	for _, task := range []string{long + "a", long + "b", long + "c"} {
		for _, agent := range []string{"a", "b"} {
			n := TrialName("eval", agent, task, 0)
			if prev, dup := seen[n]; dup {
				t.Fatalf("%s/%s and %s map to %q", agent, task, prev, n)
			}
			seen[n] = agent + "/" + task
		}
	}
	// Cells whose plain names collide get distinct hashed names.
	a, b := hashedTrialName("x", "a-b", "c", 0), hashedTrialName("x", "a", "b-c", 0)
	if TrialName("x", "a-b", "c", 0) != TrialName("x", "a", "b-c", 0) || a == b {
		t.Fatalf("collision case: plain names should collide and hashed ones differ, got %q and %q", a, b)
	}
}
