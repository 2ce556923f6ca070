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
// mounts the Trial's judge Secret read-only with only that key. Decisions the spec
// leaves open: no read-only judge tools yet (llm_judge.tools is refused at validation
// and at RegisterTrial, since nothing can yet guarantee a tool is read-only); an
// invalid answer is not asked again (max_calls >= 1 is therefore never the limit); a
// graded criterion with a bar is met when its score reaches the bar, without one the
// judge's own met decides; a binary criterion's met must agree with its 0/1 score.
//
// Imports: api/llm, api/runnerpb, api/task, runner/grading/gradefmt,
// runner/grading/timeline and the standard library.
package judge
