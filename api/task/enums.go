package task

import (
	"fmt"
	"strings"
)

// closedSet is implemented by every string enum of the wire. The strict decoder
// checks it while decoding, so a value outside the set fails with its JSON path
// even when the caller only ran DecodeStrict.
type closedSet interface {
	members() []string
}

// notMember is the one wording every closed-set failure uses, so the message an
// author sees does not depend on which layer caught the value.
func notMember(value string, members []string) string {
	return fmt.Sprintf("%q is not one of %s", value, strings.Join(members, ", "))
}

func isMember(value string, members []string) bool {
	for _, m := range members {
		if value == m {
			return true
		}
	}
	return false
}

func (adapterType) members() []string {
	return []string{string(AdapterNative), string(adapterTau), string(adapterTlkMcpCore), string(adapterTerminalBench)}
}

func (ToolCategory) members() []string {
	return []string{string(CategoryRead), string(CategoryWrite), string(CategoryCompute)}
}

func (invocationStyle) members() []string {
	return []string{string(InvocationTauSync), string(invocationMCPAsync), string(InvocationMCPServer), string(invocationDockerComposeExec)}
}

func (unstableReason) members() []string {
	return []string{string(reasonAutoID), string(ReasonTimestamp), string(reasonLLMGenerated), string(reasonRandom)}
}

func (EnvType) members() []string { return []string{string(EnvAssistant), string(EnvUser)} }

func (UserSimMode) members() []string { return []string{string(UserSimScripted), string(UserSimLLM)} }

func (CombineMethod) members() []string {
	return []string{string(CombineWeighted), string(CombineAll), string(CombineAny)}
}

func (gradingMethod) members() []string {
	return []string{string(gradingComponents), string(GradingTestExecution)}
}

func (Requestor) members() []string {
	return []string{string(RequestorAssistant), string(RequestorUser)}
}

func (TraceKind) members() []string {
	return []string{
		string(TraceOccurs), string(TraceAbsent), string(TracePrecedes), string(TraceResponds),
		string(TraceImmediatelyFollows), string(TraceOrder), string(TraceFirst), string(TraceLast),
		string(TraceBetween), string(TraceUnique),
	}
}

func (TraceSeverity) members() []string {
	return []string{string(SeverityScored), string(SeverityGate)}
}

func (onUnbound) members() []string {
	return []string{string(onUnboundFail), string(OnUnboundPass), string(OnUnboundUndecided)}
}

func (EventKind) members() []string { return []string{string(EventMessage), string(EventToolCall)} }

func (CriterionKind) members() []string {
	return []string{string(CriterionBinary), string(CriterionGraded)}
}

func (Provider) members() []string { return []string{string(ProviderOracle), string(ProviderOpenAI)} }

func (ToolCallStatus) members() []string {
	return []string{
		string(ToolCallSuccess), string(ToolCallError), string(ToolCallTimeout),
		string(ToolCallToolNotFound), string(ToolCallInvalidArguments),
	}
}

// members of TerminationReason exclude the empty value, which is valid on the
// wire ("none reported") and accepted separately by ParseTerminationReason.
func (TerminationReason) members() []string {
	return []string{
		string(TerminationAgentDone), string(TerminationUserStop), string(TerminationStuckDetected),
		string(TerminationTimeout), string(TerminationMaxTurns), string(TerminationError),
		string(TerminationRateLimit), string(TerminationAPIError), string(TerminationTrialLost),
	}
}

// ComponentNames are the keys GradingConfig.Weights may carry, in the order
// GradeComponents declares them.
func ComponentNames() []string {
	return []string{ComponentStateChecks, ComponentTranscriptRules, ComponentTraceChecks, ComponentLLMJudge, ComponentCustomChecks}
}

// ParseTerminationReason parses GradeTrialRequest.termination_reason. The empty
// string is valid (the engine reported none); any other value outside the enum
// is an error naming the accepted set, never coerced to "none", which would make
// a skewed engine look like a healthy trial.
func ParseTerminationReason(s string) (TerminationReason, error) {
	if s == "" {
		return TerminationNone, nil
	}
	r := TerminationReason(s)
	if !isMember(s, r.members()) {
		return TerminationNone, &DecodeError{Path: "termination_reason", Msg: notMember(s, r.members()) + " (or empty: none reported)"}
	}
	return r, nil
}
