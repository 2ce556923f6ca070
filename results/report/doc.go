// Package report turns a campaign's results into a terminal table, a
// self-contained HTML page (inline CSS and SVG, no external assets) and an
// aggregate.json in Tolokaforge's shape. Results come from the cluster (a
// Campaign's Trials) or from a local artifacts directory in Tolokaforge's
// layout (trials/<task_id>/<trial_index>/{trajectory,grade,metrics}.yaml).
//
// Every figure counts a trial once, whatever its number of attempts: from
// the cluster a Trial is one row (its usage already sums its attempts), from
// artifacts a trial directory is one row (its top level is the latest
// attempt; attempts/<n>/ only adds spend). The estimators are the campaign
// controller's (controllers/campaign): pass@k and tau-bench's pass^k over
// measured trials, infra failures and invalid tasks left out of n.
//
// WriteSite adds one static page per trial read from artifacts (the
// conversation, tool calls with arguments and results, the grade with each
// component's reasons, the state diff, cost and timing), linked from every
// task x agent cell. Transcripts are hostile input: every page is rendered
// by html/template, with no script on any page. Per-component pass rates
// come from grade.yaml's components (JSONPath and test_execution from their
// reasons segments, the only place the runner reports them).
//
// Imports: api/artifacts, api/result, api/rootfs, api/task, api/v1alpha1,
// controllers/campaign, results/cluster, the standard library, k8s.io/apimachinery,
// sigs.k8s.io/controller-runtime and sigs.k8s.io/yaml.
// Main serves `tolokaforge report`.
package report
