// Package e2e is the suite `make e2e` runs against the single-node cluster of
// test/nodecluster: dist/install.yaml applied as the README tells a kind user,
// the samples on real runner and DB-service pods under runc in a namespace
// enforcing the restricted Pod Security profile, a 20-Trial Campaign, and
// pods kept for `kubectl logs`. It runs only when E2E_KUBECONFIG names the
// cluster's admin kubeconfig (make e2e sets it); `go test ./...` skips it.
package e2e
