package v1alpha1_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// TestTrialSpecImmutableRuleCoversFields: the spec's immutability rule lists
// its fields one by one (so suspend can change); a field added to TrialSpec
// without a clause in the rule would silently be mutable.
func TestTrialSpecImmutableRuleCoversFields(t *testing.T) {
	src, err := os.ReadFile("trial_types.go")
	if err != nil {
		t.Fatalf("read trial_types.go: %v", err)
	}
	m := regexp.MustCompile(`(?m)^// \+kubebuilder:validation:XValidation:rule="([^"]*)",message="spec is immutable \(only spec.suspend may change\)"$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("trial_types.go has no immutability rule with the expected message")
	}
	rule := string(m[1])
	typ := reflect.TypeFor[evalv1.TrialSpec]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		clause := "(has(self." + name + ") == has(oldSelf." + name + ") && (!has(self." + name + ") || self." + name + " == oldSelf." + name + "))"
		covered := strings.Contains(rule, clause)
		if name == "suspend" {
			if strings.Contains(rule, "self.suspend") {
				t.Errorf("the rule freezes suspend, the one field that must change: %s", rule)
			}
			continue
		}
		if !covered {
			t.Errorf("spec.%s is not in the immutability rule; add %s", name, clause)
		}
	}
}

func TestTrialSuspended(t *testing.T) {
	queued := map[string]string{evalv1.LabelQueueName: "team-a"}
	for _, tc := range []struct {
		name        string
		labels      map[string]string
		suspend     *bool
		integration bool
		want        bool
	}{
		{"no queue, no suspend", nil, nil, true, false},
		{"queue label, integration on, unset: waits for admission", queued, nil, true, true},
		{"queue label, integration off: runs as without Kueue", queued, nil, false, false},
		{"queue label, admitted", queued, ptr.To(false), true, false},
		{"queue label, evicted", queued, ptr.To(true), true, true},
		{"suspended by hand without a queue", nil, ptr.To(true), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}, Spec: evalv1.TrialSpec{Suspend: tc.suspend}}
			if got := tr.Suspended(tc.integration); got != tc.want {
				t.Errorf("Suspended(%t) = %t, want %t", tc.integration, got, tc.want)
			}
		})
	}
}
