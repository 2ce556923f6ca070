package host

import (
	"context"
	"strings"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// scriptedFiller is what a scripted user says while its next line waits for
// the agent to mention something (ScriptedLine.IfAssistantContains).
const scriptedFiller = "Please continue."

// ScriptedUser says its lines in order, then StopMarker. It is stateless: the
// next line is chosen by counting the user's own messages in conv, so one
// value can serve any number of trials concurrently.
type ScriptedUser struct {
	Lines []task.ScriptedLine
}

// NewScriptedUser builds a scripted user from plain lines.
func NewScriptedUser(lines ...string) *ScriptedUser {
	u := &ScriptedUser{}
	for _, l := range lines {
		u.Lines = append(u.Lines, task.ScriptedLine{Message: l})
	}
	return u
}

// DefaultUser is the user of an AttemptConfig with User nil: the task's
// scripted_flow when its user simulator is scripted and has one, otherwise
// the initial user message, then StopMarker. With no initial message (a bare
// TaskDescription or an inline task carries none since protocol v2) it asks
// for the task as described, because a user that stops at once would end
// every trial before the agent acts, on a cluster and locally alike.
func DefaultUser(t *task.TaskDescription, initialUserMessage string) *ScriptedUser {
	if t != nil && t.UserSimulator != nil && t.UserSimulator.Mode == task.UserSimScripted && len(t.UserSimulator.ScriptedFlow) > 0 {
		return &ScriptedUser{Lines: append([]task.ScriptedLine(nil), t.UserSimulator.ScriptedFlow...)}
	}
	if initialUserMessage == "" && t != nil {
		initialUserMessage = strings.TrimSpace(t.Description)
	}
	if initialUserMessage == "" {
		return &ScriptedUser{}
	}
	return NewScriptedUser(initialUserMessage)
}

// Next implements Actor. In the user's mirrored view its own lines are role
// "assistant" and the agent's words role "user".
func (u *ScriptedUser) Next(_ context.Context, conv []task.Message, _ []*runnerpb.ToolSchema) (Turn, error) {
	// Replay its own messages against the script: a message equal to the
	// next line means that line was said; anything else was filler.
	said := 0
	lastAgent := ""
	for _, m := range conv {
		switch m.Role {
		case task.RoleAssistant:
			if said < len(u.Lines) && m.Content == u.Lines[said].Message {
				said++
			}
		case task.RoleUser:
			lastAgent = m.Content
		}
	}
	if said >= len(u.Lines) {
		return Turn{Content: StopMarker}, nil
	}
	line := u.Lines[said]
	if c := line.IfAssistantContains; c != "" && !strings.Contains(strings.ToLower(lastAgent), strings.ToLower(c)) {
		return Turn{Content: scriptedFiller}, nil
	}
	return Turn{Content: line.Message}, nil
}
