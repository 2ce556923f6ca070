package task

import "encoding/json"

// TaskDescription is one task as the runner receives it inside a TrialSpec.
// Metadata is the pack's own; the runner reads one key of it,
// max_tool_output_bytes (a whole number, 1 to 1 GiB; default 1 MiB): a Python
// tool result over it is refused to the agent as a tool error
// (docs/security-python.md).
type TaskDescription struct {
	TaskID                string                     `json:"task_id"`
	Name                  string                     `json:"name"`
	Category              string                     `json:"category"`
	Description           string                     `json:"description"`
	AdapterType           adapterType                `json:"adapter_type"`
	SchemaVersion         string                     `json:"schema_version,omitempty"`
	SystemPrompt          string                     `json:"system_prompt"`
	AgentTools            []ToolSchema               `json:"agent_tools"`
	UserTools             []ToolSchema               `json:"user_tools"`
	InitializationActions []InitializationAction     `json:"initialization_actions,omitempty"`
	InitialState          *InitialState              `json:"initial_state,omitempty"`
	UserSimulator         *UserSimulatorConfig       `json:"user_simulator,omitempty"`
	Search                *searchConfig              `json:"search,omitempty"`
	Grading               *GradingConfig             `json:"grading,omitempty"`
	SourceFiles           map[string]string          `json:"source_files,omitempty"`
	GeneratedAt           *string                    `json:"generated_at,omitempty"`
	Metadata              map[string]json.RawMessage `json:"metadata,omitempty"`
	// ToolArtifacts maps a relative path to base64 file content, unpacked into the
	// trial's artifact directory before tools are built.
	ToolArtifacts map[string]string `json:"tool_artifacts,omitempty"`
	// Environment is the task's own container (adapter_type terminal_bench
	// only): our extension, see Environment.
	Environment *Environment `json:"environment,omitempty"`
}

// adapterType is a closed set: native | tau | tlk_mcp_core | terminal_bench.
type adapterType string

const (
	AdapterNative        adapterType = "native"
	adapterTau           adapterType = "tau"
	adapterTlkMcpCore    adapterType = "tlk_mcp_core"
	adapterTerminalBench adapterType = "terminal_bench"
)

// ToolSchema is one tool offered to an actor.
type ToolSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // JSON Schema object
	Category    ToolCategory    `json:"category,omitempty"`   // default compute
	TimeoutS    float64         `json:"timeout_s,omitempty"`  // default 30
	Source      *ToolSource     `json:"source,omitempty"`     // nil: builtin, chosen by name
}

// ToolCategory is a closed set: read | write | compute.
type ToolCategory string

const (
	CategoryRead    ToolCategory = "read"
	CategoryWrite   ToolCategory = "write"
	CategoryCompute ToolCategory = "compute"
)

// ToolSource says where a tool's implementation lives.
//
// For invocation_style mcp_server the Go runner reads Extra["command"] (argv; a
// first element "tolokaforge" means the runner's own binary), Extra["url"]
// (streamable HTTP instead of a subprocess), Extra["cwd"] and Extra["env"];
// without a command, MCPServerScript is the executable (a ".py" script is run
// with python3).
type ToolSource struct {
	Toolset         string                     `json:"toolset"`
	ModulePath      string                     `json:"module_path"`
	ClassName       string                     `json:"class_name"`
	InvocationStyle invocationStyle            `json:"invocation_style,omitempty"` // default tau_sync
	MCPServerScript *string                    `json:"mcp_server_script,omitempty"`
	Extra           map[string]json.RawMessage `json:"extra,omitempty"`
}

// invocationStyle is a closed set: tau_sync | mcp_async | mcp_server | docker_compose_exec.
type invocationStyle string

const (
	InvocationTauSync           invocationStyle = "tau_sync"
	invocationMCPAsync          invocationStyle = "mcp_async"
	InvocationMCPServer         invocationStyle = "mcp_server"
	invocationDockerComposeExec invocationStyle = "docker_compose_exec"
)

// InitialState is what RegisterTrial provisions in the DB service.
type InitialState struct {
	// Tables maps a table name to a JSON array of objects, kept verbatim.
	Tables         map[string]json.RawMessage `json:"tables"`
	Schemas        []TableSchema              `json:"schemas"`
	UnstableFields []UnstableField            `json:"unstable_fields"`
	// Filesystem maps a path relative to the trial's directory to file content.
	Filesystem map[string]string `json:"filesystem,omitempty"`
}

// DBInit is the body of the DB service's POST /trials/{id}/init: the
// InitialState without its filesystem, which the runner writes itself. The
// DB service client sends it, the runner builds it (InitialState.DBInit) and
// the DB service's decoder accepts exactly its keys; schemas and
// unstable_fields are left out when empty, as the wire allows.
type DBInit struct {
	// Tables maps a table name to a JSON array of record objects.
	Tables         map[string]json.RawMessage `json:"tables"`
	Schemas        []TableSchema              `json:"schemas,omitempty"`
	UnstableFields []UnstableField            `json:"unstable_fields,omitempty"`
}

// DBInit is what the DB service provisions for st; a nil st provisions no
// tables. Tables is never nil: the service requires the key.
func (st *InitialState) DBInit() DBInit {
	init := DBInit{Tables: map[string]json.RawMessage{}}
	if st == nil {
		return init
	}
	if st.Tables != nil {
		init.Tables = st.Tables
	}
	init.Schemas, init.UnstableFields = st.Schemas, st.UnstableFields
	return init
}

// TableSchema declares a table's fields and primary key. A primary key turns
// on the DB service's DuplicateKey checks for inserts and is the default
// upsert key.
type TableSchema struct {
	TableName  string          `json:"table_name"`
	Fields     json.RawMessage `json:"fields,omitempty"`
	PrimaryKey string          `json:"primary_key,omitempty"` // default "id"
}

// UnstableField is excluded from the stable hash.
type UnstableField struct {
	TableName string         `json:"table_name"`
	FieldName string         `json:"field_name"`
	Reason    unstableReason `json:"reason,omitempty"` // default auto_id
}

// unstableReason is a closed set: auto_id | timestamp | llm_generated | random.
type unstableReason string

const (
	reasonAutoID       unstableReason = "auto_id"
	ReasonTimestamp    unstableReason = "timestamp"
	reasonLLMGenerated unstableReason = "llm_generated"
	reasonRandom       unstableReason = "random"
)

// InitializationAction runs at RegisterTrial (and ResetTrial with
// execute_init_actions) before the agent sees the environment.
type InitializationAction struct {
	EnvType   EnvType         `json:"env_type"` // assistant -> agent registry, user -> user registry
	ToolName  string          `json:"tool_name"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // JSON object
}

// EnvType is a closed set: assistant | user.
type EnvType string

const (
	EnvAssistant EnvType = "assistant"
	EnvUser      EnvType = "user"
)

// UserSimulatorConfig configures the simulated user. first_message and
// user_context left the trial spec in protocol v2.
type UserSimulatorConfig struct {
	Mode         UserSimMode    `json:"mode,omitempty"`    // default llm
	Persona      string         `json:"persona,omitempty"` // default cooperative
	Backstory    string         `json:"backstory,omitempty"`
	ScriptedFlow []ScriptedLine `json:"scripted_flow,omitempty"`
}

// UserSimMode is a closed set: scripted | llm.
type UserSimMode string

const (
	UserSimScripted UserSimMode = "scripted"
	UserSimLLM      UserSimMode = "llm"
)

// ScriptedLine is one line of a scripted user, said in order.
type ScriptedLine struct {
	Message string `json:"message"`
	// IfAssistantContains, when set, holds the line until an assistant message
	// contains this text (case-insensitive).
	IfAssistantContains string `json:"if_assistant_contains,omitempty"`
}

// searchConfig is carried for compatibility; the Go runner has no RAG service.
type searchConfig struct {
	Enabled       bool    `json:"enabled"`
	DomainName    *string `json:"domain_name,omitempty"`
	DocumentsPath *string `json:"documents_path,omitempty"`
	Host          *string `json:"host,omitempty"`
	Port          *int    `json:"port,omitempty"`
	APIKey        *string `json:"api_key,omitempty"`
}
