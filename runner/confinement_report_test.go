package runner_test

import (
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner"
)

// A registration says how the runner confines the trial's tools and checks,
// so a cluster shows an unconfined run on the Trial instead of in a log.
func TestRegistrationReportsConfinement(t *testing.T) {
	db := startDB(t)
	cases := []struct {
		name    string
		abi     func() (int, error)
		badTask bool
		want    string // trailer value; "" = none
	}{
		{name: "landlock", abi: func() (int, error) { return 7, nil }, want: "7"},
		{name: "no landlock", abi: func() (int, error) { return 0, errors.New("landlock not in the LSM list") }, want: "0"},
		{name: "refused registration carries none", abi: func() (int, error) { return 7, nil }, badTask: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startRunner(t, db, func(c *runner.Config) { c.LandlockABI = tc.abi })
			doc := baseTask(nil, nil, nil)
			if tc.badTask {
				delete(doc, "task_id")
			}
			var md metadata.MD
			resp, err := h.c.RegisterTrial(ctxT(t), &runnerpb.RegisterTrialRequest{TrialId: "conf-" + tc.want,
				TrialSpecJson: specJSON(t, "conf-"+tc.want, doc), EngineProtocolVersion: task.EngineProtocolVersion}, grpc.Trailer(&md))
			if err != nil {
				t.Fatalf("RegisterTrial: %v", err)
			}
			if resp.GetSuccess() == tc.badTask {
				t.Fatalf("success = %t (%s), want %t", resp.GetSuccess(), resp.GetError(), !tc.badTask)
			}
			got := md.Get(runnerpb.ConfinementTrailer)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Fatalf("trailer %s = %q on a refused registration, want none", runnerpb.ConfinementTrailer, got)
			case tc.want != "" && (len(got) != 1 || got[0] != tc.want):
				t.Fatalf("trailer %s = %q, want [%q]", runnerpb.ConfinementTrailer, got, tc.want)
			}
		})
	}
}
