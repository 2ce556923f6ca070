// Package e2e is the suite `make e2e` runs against the single-node cluster of
// test/nodecluster: dist/install.yaml applied as the README tells a kind user,
// the samples on real runner and DB-service pods under runc in a namespace
// enforcing the restricted Pod Security profile, pods kept for `kubectl logs`,
// the Trials' NetworkPolicies as kube-router enforces them on the node
// (networkpolicy_test.go: a runner reaches its own DB service, DNS and the
// manager's gateway, not another Trial's DB service or the manager's metrics;
// only the manager reaches a runner), a 20-Trial Campaign, and a benchmark (a
// Campaign against bare Trials: rate, pod create-to-Ready, CPU per Trial by
// component from cgroups and /proc, API writes per Trial, the manager's
// memory) printed as a table and written to $E2E_BENCH_OUT. It runs only when
// E2E_KUBECONFIG names the cluster's admin kubeconfig (make e2e sets it);
// `go test ./...` skips it.
package e2e
