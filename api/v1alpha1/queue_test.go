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

func TestTrialQueueNameAndHeld(t *testing.T) {
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		suspend *bool
		queue   string
		held    bool
	}{
		{"nothing", nil, nil, "", false},
		{"queue label", map[string]string{evalv1.LabelQueueName: "team-a"}, nil, "team-a", false},
		{"suspend false", nil, ptr.To(false), "", false},
		{"suspend true", map[string]string{evalv1.LabelQueueName: "team-a"}, ptr.To(true), "team-a", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}, Spec: evalv1.TrialSpec{Suspend: tc.suspend}}
			if got := tr.QueueName(); got != tc.queue {
				t.Errorf("QueueName() = %q, want %q", got, tc.queue)
			}
			if got := tr.Held(); got != tc.held {
				t.Errorf("Held() = %t, want %t", got, tc.held)
			}
		})
	}
}
