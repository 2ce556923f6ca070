// Package kueue pins Kueue (sigs.k8s.io/kueue/cmd/kueue, a `tool` of this
// module) so hack/build-kueue.sh builds the same controller the Kueue envtest
// suite runs. A module of its own: Kueue's dependency versions never reach the
// operator's go.mod.
package kueue
