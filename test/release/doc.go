// Package release tests what `make image` and `make release` ship: the OCI
// image (unpacked and run), dist/install.yaml against the Helm chart, and the
// one image reference shared by the manager and the pods it creates.
package release
