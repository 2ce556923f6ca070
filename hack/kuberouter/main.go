// Command kube-router is kube-router v2.1.0's network policy controller alone,
// for the e2e cluster (test/nodecluster): kube-router's own flags, informers
// and controller (pkg/controllers/netpol), wired as its pkg/cmd wires them
// when only --run-firewall is on, without the routing, service proxy and
// load balancer controllers, whose dependencies (BGP, IPVS, cloud SDKs) were
// most of the build. hack/build-node.sh builds it from the module proxy into
// bin/node; the harness runs it as a host process: the bridge CNI plugin stays
// the pod network and kube-proxy the service proxy.
//
// Test clusters only: security flaws are reported against kube-router v2.1.0,
// and nothing of this module ships in the operator or its images.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	klog.InitFlags(nil)
	config := options.NewKubeRouterConfig()
	config.AddFlags(pflag.CommandLine)
	pflag.Parse()
	// klog's flags live on the standard flag set (kubernetes/kubernetes#17162).
	if err := flag.CommandLine.Parse(nil); err != nil {
		return fmt.Errorf("kube-router: flags: %w", err)
	}
	if err := flag.Set("logtostderr", "true"); err != nil {
		return fmt.Errorf("kube-router: flags: %w", err)
	}
	if err := flag.Set("v", config.VLevel); err != nil {
		return fmt.Errorf("kube-router: flags: %w", err)
	}
	if config.HelpRequested {
		pflag.Usage()
		return nil
	}
	// kube-router's defaults turn the router and the service proxy on: this
	// build has neither, and says so rather than ignore the flags.
	if !config.RunFirewall || config.RunRouter || config.RunServiceProxy || config.RunLoadBalancer {
		return errors.New("kube-router: this build runs the network policy controller only: " +
			"pass --run-firewall=true --run-router=false --run-service-proxy=false --run-loadbalancer=false")
	}
	if config.Kubeconfig == "" {
		return errors.New("kube-router: --kubeconfig is required")
	}
	if os.Geteuid() != 0 {
		return errors.New("kube-router: needs root (iptables, ipset)")
	}
	rc, err := clientcmd.BuildConfigFromFlags(config.Master, config.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kube-router: kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kube-router: client: %w", err)
	}

	stopCh := make(chan struct{})
	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods().Informer()
	nsInformer := factory.Core().V1().Namespaces().Informer()
	npInformer := factory.Networking().V1().NetworkPolicies().Informer()
	factory.Start(stopCh)
	if !cache.WaitForCacheSync(stopCh, podInformer.HasSynced, nsInformer.HasSynced, npInformer.HasSynced) {
		return errors.New("kube-router: informer caches did not sync")
	}

	// The controller sends heartbeats kube-router's health controller would
	// read; nothing serves health here, so they are drained.
	healthChan := make(chan *healthcheck.ControllerHeartbeat, 10)
	go func() {
		for range healthChan {
		}
	}()
	var ipsetMutex sync.Mutex
	iptablesCmdHandlers, ipSetHandlers, err := netpol.NewIPTablesHandlers(config)
	if err != nil {
		return fmt.Errorf("kube-router: iptables handlers: %w", err)
	}
	npc, err := netpol.NewNetworkPolicyController(client, config, podInformer, npInformer, nsInformer,
		&ipsetMutex, iptablesCmdHandlers, ipSetHandlers)
	if err != nil {
		return fmt.Errorf("kube-router: network policy controller: %w", err)
	}
	for _, h := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{{podInformer, npc.PodEventHandler}, {nsInformer, npc.NamespaceEventHandler}, {npInformer, npc.NetworkPolicyEventHandler}} {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return fmt.Errorf("kube-router: event handler: %w", err)
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go npc.Run(healthChan, stopCh, &wg)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	klog.Infof("kube-router: network policy controller running; stopping on %v", <-sig)
	close(stopCh)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	return nil
}
