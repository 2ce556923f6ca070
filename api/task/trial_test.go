package task

import (
	"reflect"
	"testing"
)

func TestNewTrialSpec(t *testing.T) {
	desc := &TaskDescription{TaskID: "shop_orders_02"}
	agent := &ModelConfig{Provider: ProviderOracle}
	tests := []struct {
		name string
		p    TrialSpecParams
		want *TrialSpec
	}{
		{"with a DB service", TrialSpecParams{Task: desc, TrialIndex: 3, RunID: "ns/camp", AttemptID: "a-1", Agent: agent, DBServiceURL: "http://db:8080"},
			&TrialSpec{TrialID: "shop_orders_02:3", RunID: "ns/camp", AttemptID: "a-1", Task: desc, Agent: agent,
				EnvEndpoints: &EnvEndpoints{DBServiceURL: "http://db:8080"}}},
		{"DB service not known yet", TrialSpecParams{Task: desc, RunID: "oracle", AttemptID: "o", Agent: agent},
			&TrialSpec{TrialID: "shop_orders_02:0", RunID: "oracle", AttemptID: "o", Task: desc, Agent: agent}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewTrialSpec(tt.p); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NewTrialSpec = %+v, want %+v", got, tt.want)
			}
		})
	}
}
