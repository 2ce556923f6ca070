package grading

import (
	"fmt"
	"strings"

	"tolokaforge.io/operator/api/task"
)

// resolveTool matches an authored tool name against registered tools: the exact name,
// else the single registered tool named "<prefix>_<name>" (golden actions and required
// actions are authored unprefixed, while toolsets register prefixed names). matches
// lists every suffix candidate when resolution fails on ambiguity.
func resolveTool(name string, registered []string) (resolved string, matches []string) {
	if name == "" {
		return "", nil
	}
	for _, r := range registered {
		if r == name {
			return r, nil
		}
	}
	suffix := "_" + name
	for _, r := range registered {
		if len(r) > len(suffix) && strings.HasSuffix(r, suffix) {
			matches = append(matches, r)
		}
	}
	if len(matches) == 1 {
		return matches[0], nil
	}
	return "", matches
}

// unresolvedReason says why resolveTool found nothing, for one offending action.
func unresolvedReason(name string, matches []string, actor string) string {
	switch {
	case name == "":
		return "names no tool at all"
	case len(matches) == 0:
		return fmt.Sprintf("matches no registered %s tool (neither %q nor *_%s)", actor, name, name)
	default:
		return fmt.Sprintf("matches several registered %s tools (%s)", actor, strings.Join(matches, ", "))
	}
}

// resolveGoldenActions resolves every golden action against the agent tools registered
// for the trial, before anything writes to its database. Every offending action is named
// in one error, with its index and the registered set.
func resolveGoldenActions(actions []task.GoldenAction, agentTools []string) ([]string, error) {
	resolved := make([]string, len(actions))
	var bad []string
	for i, a := range actions {
		r, matches := resolveTool(a.ToolName, agentTools)
		if r == "" {
			bad = append(bad, fmt.Sprintf("action %d (%s) %s", i, a.ToolName, unresolvedReason(a.ToolName, matches, "agent")))
			continue
		}
		resolved[i] = r
	}
	if len(bad) > 0 {
		return nil, hashFailed(fmt.Sprintf("UnresolvableGoldenAction: golden actions naming no tool the replay can call: %s; registered agent tools: [%s]",
			strings.Join(bad, "; "), strings.Join(agentTools, ", ")), nil)
	}
	return resolved, nil
}
