// Command cluster brings the e2e cluster (test/nodecluster) up or down:
//
//	cluster up --dir bin/cluster --k8s-bin bin/k8s --node-bin bin/node --image bin/image/pause.tar [--image FILE]...
//	cluster down --dir bin/cluster
//	cluster containerd --dir bin/cluster
//	cluster registry --dir bin/cluster
//
// up prints the admin kubeconfig's path last; a failed up tears down what it
// started before exiting 1. down is safe to run twice and after a failed up.
// containerd prints the socket of the cluster that is up (it lives in the
// cluster's short runtime directory, not under --dir); registry prints the
// HOST:PORT of its image registry (plain HTTP; `tolokaforge pack build
// --registry HOST:PORT --insecure-registry` pushes there, the node pulls).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"tolokaforge.io/operator/test/nodecluster"
)

type images []string

func (i *images) String() string     { return fmt.Sprint(*i) }
func (i *images) Set(v string) error { *i = append(*i, v); return nil }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "up" && args[0] != "down" && args[0] != "containerd" && args[0] != "registry") {
		return errors.New("usage: cluster up|down|containerd|registry [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o nodecluster.Options
	var imgs images
	fs.StringVar(&o.Dir, "dir", "bin/cluster", "the cluster's directory (wiped by up)")
	fs.StringVar(&o.K8sBin, "k8s-bin", "bin/k8s", "directory of etcd and kube-apiserver (hack/build-envtest.sh)")
	fs.StringVar(&o.NodeBin, "node-bin", "bin/node", "directory of kubelet, kube-proxy, kube-scheduler, kube-controller-manager (hack/build-node.sh)")
	fs.StringVar(&o.RunDir, "run-dir", "", "the cluster's runtime directory, for its unix sockets (default: "+nodecluster.RunRoot+"/<hash of --dir>)")
	fs.StringVar(&o.NodeIP, "node-ip", "", "address the API server advertises (default: the default route's source)")
	fs.IntVar(&o.RegistryPort, "registry-port", nodecluster.DefaultRegistryPort, "port of the cluster's image registry on 127.0.0.1")
	fs.StringVar(&o.RegistryDir, "registry-dir", "", "the registry's storage, kept across clusters (default: "+nodecluster.DefaultRegistryDir()+")")
	fs.Var(&imgs, "image", "an image tarball to import into the node (repeatable; the pause image is required)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	o.Images, o.Log = imgs, stderr
	if args[0] == "containerd" || args[0] == "registry" {
		st, err := nodecluster.LoadState(o.Dir)
		if err != nil {
			return err
		}
		if args[0] == "registry" {
			fmt.Fprintln(stdout, st.Registry)
		} else {
			fmt.Fprintln(stdout, st.Containerd)
		}
		return nil
	}
	if args[0] == "down" {
		return nodecluster.Down(context.WithoutCancel(ctx), o.Dir, stderr)
	}
	st, err := nodecluster.Up(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "cluster: up failed, tearing down: %v\n", err)
		if derr := nodecluster.Down(context.WithoutCancel(ctx), o.Dir, stderr); derr != nil {
			return errors.Join(err, derr)
		}
		return err
	}
	fmt.Fprintln(stdout, st.Kubeconfig)
	return nil
}
