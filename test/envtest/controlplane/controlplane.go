// Package controlplane is the control plane of the envtest framework alone: a
// real kube-apiserver and etcd (KUBEBUILDER_ASSETS, built from source by
// hack/build-envtest.sh), optionally with the module's CRDs installed and
// extra kube-apiserver flags. test/envtest builds its Env on it; suites that
// need neither the pod simulator nor a manager (API validation, RBAC,
// `results pull`) start it directly, and so must the pod simulator's own
// specs, since test/envtest imports test/podsim. Nothing of the module is
// among its imports, so any test may use it. Test code only: production code
// never imports it.
//
// Imports: the standard library, k8s.io/client-go and sigs.k8s.io/controller-runtime.
package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/client-go/rest"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options shape a control plane.
type Options struct {
	// CRDs installs the module's CRDs from CRDDir (default: config/crd/bases
	// beside the go.mod above the working directory).
	CRDs   bool
	CRDDir string
	// APIServerFlags are extra kube-apiserver flags, name to value without
	// the dashes: {"authorization-mode": "RBAC"} (envtest's default is
	// AlwaysAllow).
	APIServerFlags map[string]string
}

// ControlPlane is a running kube-apiserver and etcd. The embedded
// Environment gives Stop and AddUser; Config is the admin's.
type ControlPlane struct {
	*crenvtest.Environment
	Config *rest.Config
}

// Start starts a control plane; Stop stops it.
func Start(o Options) (*ControlPlane, error) {
	env := &crenvtest.Environment{} // the binaries: KUBEBUILDER_ASSETS
	if o.CRDs {
		dir := o.CRDDir
		if dir == "" {
			var err error
			if dir, err = moduleCRDs(); err != nil {
				return nil, err
			}
		}
		env.CRDDirectoryPaths, env.ErrorIfCRDPathMissing = []string{dir}, true
	}
	names := make([]string, 0, len(o.APIServerFlags))
	for name := range o.APIServerFlags {
		names = append(names, name)
	}
	sort.Strings(names)
	args := env.ControlPlane.GetAPIServer().Configure()
	for _, name := range names {
		args.Set(name, o.APIServerFlags[name])
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start the control plane: %w", err)
	}
	return &ControlPlane{Environment: env, Config: cfg}, nil
}

// moduleCRDs finds config/crd/bases beside the go.mod above the working
// directory (a test runs in its package's directory).
func moduleCRDs() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("envtest: working directory: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "config", "crd", "bases"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("envtest: no go.mod above %s to find config/crd/bases", dir)
		}
	}
}
