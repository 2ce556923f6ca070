package campaign

import (
	"testing"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// spec.slots goes down to every Trial (a copy: the Trial's spec is its own);
// a Campaign without it runs its Trials on slots with the defaults, unless
// it keeps its Trials' pods; Disabled is passed down as said.
func TestBuildTrialPassesSlots(t *testing.T) {
	c := campaign(1, 1, "a")
	tr := buildTrial(c, Cell{Agent: "a", Task: "t"}, "n", c.Spec.Agents[0].Model)
	if got := tr.Spec.Slots; !got.Enabled() || got.MaxReuses != 50 || got.IdleSeconds == nil || *got.IdleSeconds != 30 {
		t.Fatalf("no slots on the campaign: trial has %+v, want Enabled, 50, 30", got)
	}
	c.Spec.KeepPodsAfterFinished = true
	if tr := buildTrial(c, Cell{Agent: "a", Task: "t"}, "n", c.Spec.Agents[0].Model); tr.Spec.Slots != nil {
		t.Fatalf("a campaign keeping its pods, trial has %+v", tr.Spec.Slots)
	}
	c.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsDisabled}
	if tr := buildTrial(c, Cell{Agent: "a", Task: "t"}, "n", c.Spec.Agents[0].Model); tr.Spec.Slots.Enabled() {
		t.Fatalf("Disabled on the campaign, trial has %+v", tr.Spec.Slots)
	}
	c.Spec.KeepPodsAfterFinished = false
	c.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled, MaxReuses: 7}
	tr = buildTrial(c, Cell{Agent: "a", Task: "t"}, "n", c.Spec.Agents[0].Model)
	if !tr.Spec.Slots.Enabled() || tr.Spec.Slots.MaxReuses != 7 {
		t.Fatalf("trial slots %+v", tr.Spec.Slots)
	}
	c.Spec.Slots.MaxReuses = 9
	if tr.Spec.Slots.MaxReuses != 7 {
		t.Fatal("the trial shares the campaign's SlotPolicy")
	}
}
