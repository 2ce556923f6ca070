package task

import "encoding/json"

// Defaults of the wire, in one place so the decoder, the pack importer and tests
// agree on them.
const (
	defaultSchemaVersion   = "1.0.0"
	DefaultToolTimeoutS    = 30.0
	DefaultPrimaryKey      = "id"
	DefaultPersona         = "cooperative"
	DefaultPassThreshold   = 1.0
	DefaultJudgeMaxCalls   = 8
	DefaultTraceWeight     = 1.0
	DefaultCriterionWeight = 1.0
	DefaultCheckWeight     = 1.0
	DefaultTraceMin        = 1
)

func ptr[T any](v T) *T { return &v }

// emptyObject is the default of every `arguments`: a fresh slice each time so no
// two values alias one backing array.
func emptyObject() json.RawMessage { return json.RawMessage("{}") }

// ApplyDefaults fills the TrialSpec's task with the spec's defaults. Absent
// optional blocks stay nil.
func (s *TrialSpec) ApplyDefaults() {
	if s.Task != nil {
		s.Task.ApplyDefaults()
	}
}

// ApplyDefaults fills every unset defaulted field. Lists an actor owns
// (agent_tools, user_tools, initialization_actions) become empty, never nil.
func (t *TaskDescription) ApplyDefaults() {
	if t.SchemaVersion == "" {
		t.SchemaVersion = defaultSchemaVersion
	}
	if t.AgentTools == nil {
		t.AgentTools = []ToolSchema{}
	}
	if t.UserTools == nil {
		t.UserTools = []ToolSchema{}
	}
	for i := range t.AgentTools {
		t.AgentTools[i].applyDefaults()
	}
	for i := range t.UserTools {
		t.UserTools[i].applyDefaults()
	}
	if t.InitializationActions == nil {
		t.InitializationActions = []InitializationAction{}
	}
	if t.Environment != nil {
		t.Environment.applyDefaults()
	}
	for i := range t.InitializationActions {
		if t.InitializationActions[i].Arguments == nil {
			t.InitializationActions[i].Arguments = emptyObject()
		}
	}
	if t.InitialState != nil {
		t.InitialState.applyDefaults()
	}
	if u := t.UserSimulator; u != nil {
		if u.Mode == "" {
			u.Mode = UserSimLLM
		}
		if u.Persona == "" {
			u.Persona = DefaultPersona
		}
	}
	if t.Grading != nil {
		t.Grading.ApplyDefaults()
	}
	if t.SourceFiles == nil {
		t.SourceFiles = map[string]string{}
	}
	if t.Metadata == nil {
		t.Metadata = map[string]json.RawMessage{}
	}
	if t.ToolArtifacts == nil {
		t.ToolArtifacts = map[string]string{}
	}
}

func (s *ToolSchema) applyDefaults() {
	if s.Category == "" {
		s.Category = CategoryCompute
	}
	if s.TimeoutS == 0 {
		s.TimeoutS = DefaultToolTimeoutS
	}
	if src := s.Source; src != nil {
		if src.InvocationStyle == "" {
			src.InvocationStyle = InvocationTauSync
		}
		if src.Extra == nil {
			src.Extra = map[string]json.RawMessage{}
		}
	}
}

func (st *InitialState) applyDefaults() {
	if st.Tables == nil {
		st.Tables = map[string]json.RawMessage{}
	}
	if st.Schemas == nil {
		st.Schemas = []TableSchema{}
	}
	if st.UnstableFields == nil {
		st.UnstableFields = []UnstableField{}
	}
	if st.Filesystem == nil {
		st.Filesystem = map[string]string{}
	}
	for i := range st.Schemas {
		if st.Schemas[i].PrimaryKey == "" {
			st.Schemas[i].PrimaryKey = DefaultPrimaryKey
		}
	}
	for i := range st.UnstableFields {
		if st.UnstableFields[i].Reason == "" {
			st.UnstableFields[i].Reason = reasonAutoID
		}
	}
}

// ApplyDefaults fills the grading block's defaults. Weights becomes an empty map
// when absent, never a share for a component nobody weighted: a configured
// component without a weight must reach MissingComponentWeight at grade time.
func (g *GradingConfig) ApplyDefaults() {
	if g.CombineMethod == "" {
		g.CombineMethod = CombineWeighted
	}
	if g.Weights == nil {
		g.Weights = map[string]float64{}
	}
	if g.PassThreshold == nil {
		g.PassThreshold = ptr(DefaultPassThreshold)
	}
	if g.GradingMethod == "" {
		g.GradingMethod = gradingComponents
	}
	if sc := g.StateChecks; sc != nil {
		for i := range sc.GoldenActions {
			if sc.GoldenActions[i].Arguments == nil {
				sc.GoldenActions[i].Arguments = emptyObject()
			}
		}
	}
	if tr := g.TranscriptRules; tr != nil {
		for i := range tr.RequiredActions {
			a := &tr.RequiredActions[i]
			if a.Requestor == "" {
				a.Requestor = RequestorAssistant
			}
			if a.Arguments == nil {
				a.Arguments = emptyObject()
			}
		}
		for i := range tr.CommunicateInfo {
			if tr.CommunicateInfo[i].Required == nil {
				tr.CommunicateInfo[i].Required = ptr(true)
			}
		}
	}
	if tc := g.TraceChecks; tc != nil {
		for i := range tc.Constraints {
			tc.Constraints[i].applyDefaults()
		}
		for i := range tc.Alternatives {
			if tc.Alternatives[i].Constraints == nil {
				tc.Alternatives[i].Constraints = []TraceConstraint{}
			}
			for j := range tc.Alternatives[i].Constraints {
				tc.Alternatives[i].Constraints[j].applyDefaults()
			}
		}
	}
	if j := g.LLMJudge; j != nil {
		if j.IncludeAgentSystemPrompt == nil {
			j.IncludeAgentSystemPrompt = ptr(true)
		}
		if j.MaxCalls == nil {
			j.MaxCalls = ptr(DefaultJudgeMaxCalls)
		}
		if j.Tools == nil {
			j.Tools = []string{}
		}
		if j.Rubric.Criteria == nil {
			j.Rubric.Criteria = []Criterion{}
		}
		for i := range j.Rubric.Criteria {
			c := &j.Rubric.Criteria[i]
			if c.Kind == "" {
				c.Kind = CriterionBinary
			}
			if c.Weight == nil {
				c.Weight = ptr(DefaultCriterionWeight)
			}
		}
	}
	if cc := g.CustomChecks; cc != nil {
		if cc.FailOnError == nil {
			cc.FailOnError = ptr(true)
		}
		for i := range cc.Checks {
			if cc.Checks[i].Weight == nil {
				cc.Checks[i].Weight = ptr(DefaultCheckWeight)
			}
		}
	}
}

func (c *TraceConstraint) applyDefaults() {
	if c.Severity == "" {
		c.Severity = SeverityScored
	}
	if c.Weight == nil {
		c.Weight = ptr(DefaultTraceWeight)
	}
	if c.OnUnbound == "" {
		c.OnUnbound = onUnboundFail
	}
	// A binding constraint is decided by its require tree, so only a plain
	// occurs/between reads min.
	if c.Min == nil && c.Bind == nil && (c.Kind == TraceOccurs || c.Kind == TraceBetween) {
		c.Min = ptr(DefaultTraceMin)
	}
	if c.Require != nil {
		c.Require.applyDefaults()
	}
}
