package host

import (
	"context"
	"fmt"
	"regexp"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// skewPattern recognises RegisterTrial refusals about the engine protocol
// version. The spec only promises that the runner "names the skew" in
// RegisterTrialResponse.error, so this matches every phrasing a runner is
// likely to use: the field name (engine_protocol_version, also spaced or
// camel-cased), "protocol version" and "protocol skew"/"version skew".
// Anything else success=false is a task the runner refused: Invalid.
var skewPattern = regexp.MustCompile(`(?i)engine[ _-]?protocol[ _-]?version|protocol[ _-]?version|(protocol|version)[ _-]?skew`)

// isProtocolSkew reports whether a RegisterTrial refusal is about the version lock.
func isProtocolSkew(msg string) bool { return skewPattern.MatchString(msg) }

// trialNotFoundPattern is the spec's "Trial '<id>' not found" (GradeTrial's
// first error row): the runner holds no registration, i.e. trial_lost.
var trialNotFoundPattern = regexp.MustCompile(`Trial '.*' not found`)

// registration is what RegisterTrial handed back, sliced per actor by the
// ordering contract.
type registration struct {
	agentTools []*runnerpb.ToolSchema
	userTools  []*runnerpb.ToolSchema
}

// register sends RegisterTrial and classifies a refusal; a non-nil *ending
// means the attempt is over.
func (r *run) register(ctx context.Context) (*registration, *ending) {
	specJSON, err := task.Encode(r.cfg.Spec)
	if err != nil {
		return nil, &ending{outcome: evalv1.OutcomeInvalid, reason: evalv1.ReasonInvalidConfig,
			message: fmt.Sprintf("encode trial spec %q: %v", r.trialID, err)}
	}
	rctx, cancel := context.WithTimeout(ctx, r.registerTimeout)
	defer cancel()
	resp, err := r.cfg.Runner.RegisterTrial(outgoing(rctx), &runnerpb.RegisterTrialRequest{
		TrialId:               r.trialID,
		TrialSpecJson:         string(specJSON),
		DefaultToolTimeoutS:   r.cfg.DefaultToolTimeout.Seconds(),
		EngineProtocolVersion: task.EngineProtocolVersion,
	})
	if err != nil {
		return nil, r.transportEnding(ctx, "register trial", err)
	}
	if !resp.GetSuccess() {
		if isProtocolSkew(resp.GetError()) {
			return nil, &ending{outcome: evalv1.OutcomeProtocolSkew, reason: evalv1.ReasonProtocolSkew, message: resp.GetError()}
		}
		// A DB service the runner could not reach is UNAVAILABLE (the
		// transport path above), so an in-band refusal is the task's or the
		// state's: the runner knows no DB service to probe before a trial
		// registers, so its health cannot tell the two apart here.
		return nil, &ending{outcome: evalv1.OutcomeInvalid, reason: evalv1.ReasonInvalidTask, message: resp.GetError()}
	}
	schemas := resp.GetToolSchemas()
	nAgent, nUser := int(resp.GetNumAgentTools()), int(resp.GetNumUserTools())
	if nAgent < 0 || nUser < 0 || nAgent+nUser != len(schemas) {
		// Without a trustworthy partition the host would offer tools to the
		// wrong actor; a runner this far from the protocol is skewed, and
		// retrying against the same image cannot help.
		return nil, &ending{outcome: evalv1.OutcomeProtocolSkew, reason: evalv1.ReasonProtocolSkew, message: fmt.Sprintf(
			"RegisterTrial answered %d tool schemas but num_agent_tools=%d and num_user_tools=%d (the ordering contract needs num_agent_tools + num_user_tools == len(tool_schemas))",
			len(schemas), nAgent, nUser)}
	}
	return &registration{
		agentTools: schemas[:nAgent:nAgent],
		userTools:  schemas[nAgent:],
	}, nil
}
