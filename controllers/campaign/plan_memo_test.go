package campaign

import (
	"reflect"
	"testing"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// A memoized expansion plans exactly what a fresh one does, is reused while
// the spec and the tasks stay, and is redone when either changes.
func TestPlanExpansionMemo(t *testing.T) {
	memo := &expansionMemo{}
	world := func(c *evalv1.Campaign, tasks []string, m *expansionMemo) *World {
		return &World{Campaign: c, Tasks: tasks, Now: now, memo: m,
			Trials: []trialView{tv("a", "t1", 0, evalv1.PhasePassed)}}
	}
	c := campaign(3, 0, "a")
	fresh := world(c, []string{"t1", "t2"}, nil).Plan()
	got := world(c, []string{"t1", "t2"}, memo).Plan()
	if !reflect.DeepEqual(fresh, got) {
		t.Fatalf("memoized plan differs:\n got %+v\nwant %+v", got, fresh)
	}
	first := memo.exp
	if first == nil || len(first.cells) != 6 {
		t.Fatalf("memo holds %+v, want the 6 cells of 3 x 2 tasks", first)
	}
	world(c, []string{"t1", "t2"}, memo).Plan()
	if memo.exp != first {
		t.Error("same spec and tasks: the expansion was redone, want it reused")
	}

	cases := []struct {
		name  string
		edit  func(*evalv1.Campaign)
		tasks []string
		total int32
	}{
		{"trialsPerTask", func(c *evalv1.Campaign) { c.Spec.TrialsPerTask = 4 }, []string{"t1", "t2"}, 8},
		{"tasks", func(*evalv1.Campaign) {}, []string{"t1"}, 3},
		{"agents", func(c *evalv1.Campaign) {
			c.Spec.Agents = append(c.Spec.Agents, evalv1.NamedAgent{Name: "b", Model: evalv1.ModelSpec{Provider: evalv1.ProviderOracle}})
		}, []string{"t1", "t2"}, 12},
		{"another campaign's UID", func(c *evalv1.Campaign) { c.UID = "other" }, []string{"t1", "t2"}, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &expansionMemo{}
			world(campaign(3, 0, "a"), []string{"t1", "t2"}, m).Plan()
			before := m.exp
			c := campaign(3, 0, "a")
			tc.edit(c)
			got := world(c, tc.tasks, m).Plan()
			want := world(c, tc.tasks, nil).Plan()
			if m.exp == before {
				t.Error("the expansion was reused after the change")
			}
			if got.Status.Counts.Total != tc.total || !reflect.DeepEqual(got, want) {
				t.Errorf("total %d (want %d); memoized plan equals a fresh one: %v", got.Status.Counts.Total, tc.total, reflect.DeepEqual(got, want))
			}
		})
	}
}
