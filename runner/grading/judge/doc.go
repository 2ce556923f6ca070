// Package judge is the LLM rubric judge (grading-config.md, "LLM judge"): the prompt
// (the rubric, and the policy and timeline as quoted evidence), the small Model
// interface it calls, its implementation on api/llm (the project's one
// OpenAI-compatible client), the key file it reads, and the validation of the judge's
// answer against the rubric into per-criterion results and the component score. The
// grader's evaluator (runner/grading, eval_judge.go) decides whether the judge runs,
// files the ledger and folds the score; Run does the calls.
//
// One judge call is one billed provider round trip (api/llm retries refused tries
// inside it and bills the answered one once). Its key is never read from the
// environment: TrialSpec.judge.api_key_env keeps its wire name but names a file in the
// runner's secrets directory (--secrets-dir, DefaultSecretsDir), where the operator
// mounts the Trial's judge Secret read-only with only that key.
//
// Judge tools (tools.go): llm_judge.tools offers the judge agent tools by their
// registered names; NewTools refuses, by name, any not registered category read, and a
// call of a tool not offered is shown to the judge as refused, naming it, and runs
// nothing. The grader runs the calls against the trial's state and restores that state
// after the judge (runner/grading, eval_judge.go), so the judge can never change what
// is graded. max_calls bounds the judge's LLM calls and tool calls together: tools are
// offered on a call only while a tool call and the answer still fit after it, so the
// last call is offered none and must be the answer; a judge that asks for more than
// fits is JUDGE_STATUS_ERRORED with a reason naming max_calls, never a score.
//
// Decisions the spec leaves open: an invalid answer is not asked again (that would
// spend calls to hide a judge that cannot follow the schema); a graded criterion with a
// bar is met when its score reaches the bar, without one the judge's own met decides; a
// binary criterion's met must agree with its 0/1 score.
//
// Imports: api/llm, api/runnerpb, api/task, runner/grading/gradefmt,
// runner/grading/timeline and the standard library.
package judge
