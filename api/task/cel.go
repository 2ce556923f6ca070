package task

import (
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"
)

// The variables a custom check's CEL expression reads (grading-config.md, "Custom
// checks"). JSON numbers in db, args and results reach CEL as doubles, CEL's own
// convention for JSON, so `balance == 300.0 - total` holds whether a table stores 300
// or 300.0.
const (
	CELVarDB                = "db"                 // map: table name -> list of records (stable state)
	CELVarTimeline          = "timeline"           // list of events as trace checks see them
	CELVarTerminationReason = "termination_reason" // string; "" when none was reported
	CELVarTask              = "task"               // map: id, category, metadata
)

// customCheckEnv is the one environment custom checks compile in, at every entrance
// (RegisterTrial, the Task's Valid condition, pack validate/import) and at grade time,
// so an expression that validates is exactly one the runner can run. It holds the
// standard library and the strings extension: no function reaches a file, the network
// or the clock, so evaluation is hermetic.
var customCheckEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(CELVarDB, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(CELVarTimeline, cel.ListType(cel.MapType(cel.StringType, cel.DynType))),
		cel.Variable(CELVarTerminationReason, cel.StringType),
		cel.Variable(CELVarTask, cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(),
	)
})

// CustomCheckEnv returns the CEL environment custom checks compile and run in.
func CustomCheckEnv() (*cel.Env, error) { return customCheckEnv() }

// celCompileError is an expression that does not compile, with every issue's position
// (1-based line and column).
type celCompileError struct {
	Expr   string
	Issues []string // "line L, column C: message"
}

func (e *celCompileError) Error() string {
	return fmt.Sprintf("CEL expression %q does not compile: %s", e.Expr, strings.Join(e.Issues, "; "))
}

// CompileCustomCheck parses and type-checks one custom-check expression (an expr or a
// when guard), which must yield a bool. Errors are *CELCompileError.
func CompileCustomCheck(expr string) (*cel.Ast, error) {
	env, err := CustomCheckEnv()
	if err != nil {
		return nil, fmt.Errorf("building the custom-check CEL environment: %w", err)
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		ce := &celCompileError{Expr: expr}
		for _, e := range iss.Errors() {
			ce.Issues = append(ce.Issues, fmt.Sprintf("line %d, column %d: %s", e.Location.Line(), e.Location.Column()+1, e.Message))
		}
		return nil, ce
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, &celCompileError{Expr: expr, Issues: []string{fmt.Sprintf("line 1, column 1: yields %s, not bool", t)}}
	}
	return ast, nil
}
