package nodecluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Down tears down the cluster Up recorded under dir, as far as it got, and
// puts back what Up found: every step runs even when an earlier one fails,
// and the errors are joined. A dir without state is nothing to do.
func Down(ctx context.Context, dir string, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	logf := func(f string, a ...any) { fmt.Fprintf(log, "cluster: "+f+"\n", a...) }
	st, err := LoadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		logf("no cluster state under %s: nothing to tear down", dir)
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
			logf("%v", err)
		}
	}

	// Controllers first, so nothing recreates the pods about to be deleted;
	// then the pods through kubelet, which stops their containers and runs
	// the CNI DEL that frees veths and addresses.
	for _, n := range []string{"kube-controller-manager", "kube-scheduler"} {
		keep(stopNamed(st, n, logf))
	}
	if alive(st, "kube-apiserver") && alive(st, "kubelet") {
		keep(deleteAllPods(ctx, st, logf))
	}
	// kube-router first: it would put back the chains removed below.
	for _, n := range []string{"kube-router", "kube-proxy", "kubelet", "kube-apiserver", "etcd", "containerd", "registry"} {
		keep(stopNamed(st, n, logf))
	}
	// Whatever outlived containerd: shims and the containers under
	// kubepods (a pod kubelet could not delete).
	keep(killShims(st.Containerd, logf))
	keep(removeKubepodsCgroups(logf))
	if b := filepath.Join(st.NodeBin, "kube-proxy"); fileExists(b) {
		if out, err := exec.Command(b, "--cleanup").CombinedOutput(); err != nil {
			keep(fmt.Errorf("cluster: kube-proxy --cleanup: %w: %s", err, strings.TrimSpace(string(out))))
		}
	}
	keep(removeNetns(st, logf))
	// KUBE- also covers kube-router's chains (KUBE-ROUTER-*, KUBE-NWPLCY-*,
	// KUBE-POD-FW-*): its --cleanup-config panics on a kernel without IPVS.
	for _, tool := range []string{"iptables", "ip6tables"} {
		keep(removeChains(tool, []string{"KUBE-", "CNI-"}))
	}
	keep(removeIPSets(st, logf))
	if st.NftTables != nil || len(nftTables()) > 0 {
		for _, t := range nftTables() {
			if !slices.Contains(st.NftTables, t) && (strings.HasPrefix(t, "ip ") || strings.HasPrefix(t, "ip6 ")) {
				if out, err := exec.Command("sh", "-c", "nft delete table "+t).CombinedOutput(); err != nil {
					keep(fmt.Errorf("cluster: nft delete table %s: %w: %s", t, err, out))
				}
			}
		}
	}
	if fileExists("/sys/class/net/" + Bridge) {
		if out, err := exec.Command("ip", "link", "del", Bridge).CombinedOutput(); err != nil {
			keep(fmt.Errorf("cluster: ip link del %s: %w: %s", Bridge, err, out))
		}
	}
	keep(unmountUnder(append([]string{st.Dir, st.RunDir}, st.Created...)))
	for k, v := range st.Sysctls {
		cur, err := os.ReadFile("/proc/sys/" + k)
		if err != nil || strings.TrimSpace(string(cur)) == v {
			continue
		}
		if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
			keep(fmt.Errorf("cluster: restore sysctl %s=%s: %w", k, v, err))
		} else {
			logf("restored %s=%s (was %s)", strings.ReplaceAll(k, "/", "."), v, strings.TrimSpace(string(cur)))
		}
	}
	for _, p := range st.Created {
		if err := os.RemoveAll(p); err != nil {
			keep(fmt.Errorf("cluster: remove %s: %w", p, err))
		}
	}
	// The runtime directory whole (its parent too once empty); the
	// cluster's own files but its logs: they explain a failed run.
	if st.RunDir != "" {
		if err := os.RemoveAll(st.RunDir); err != nil {
			keep(fmt.Errorf("cluster: remove %s: %w", st.RunDir, err))
		}
		_ = os.Remove(filepath.Dir(st.RunDir)) // fails while another cluster uses it
	}
	ents, _ := os.ReadDir(st.Dir)
	for _, e := range ents {
		if e.Name() == "logs" || e.Name() == stateFile {
			continue
		}
		if err := os.RemoveAll(filepath.Join(st.Dir, e.Name())); err != nil {
			keep(fmt.Errorf("cluster: %w", err))
		}
	}
	if len(errs) == 0 {
		keep(os.Remove(filepath.Join(st.Dir, stateFile)))
		logf("torn down")
	}
	return errors.Join(errs...)
}

func find(st *State, name string) (Proc, bool) {
	for _, p := range st.Procs {
		if p.Name == name {
			return p, true
		}
	}
	return Proc{}, false
}

// alive: the PID still names the process Up started (not a reused PID).
func alive(st *State, name string) bool {
	p, ok := find(st, name)
	return ok && p.Start != 0 && procStart(p.PID) == p.Start
}

// stopNamed sends TERM, waits up to 15 s, then KILL.
func stopNamed(st *State, name string, logf func(string, ...any)) error {
	p, ok := find(st, name)
	if !ok || !alive(st, name) {
		return nil
	}
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if procStart(p.PID) != p.Start {
			logf("stopped %s (pid %d)", name, p.PID)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("cluster: kill %s (pid %d): %w", name, p.PID, err)
	}
	for range 50 {
		if procStart(p.PID) != p.Start {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	logf("killed %s (pid %d) after 15s", name, p.PID)
	return nil
}

// deleteAllPods deletes every pod, the manager's first (it creates pods of
// its own), and waits until kubelet has stopped them all.
func deleteAllPods(ctx context.Context, st *State, logf func(string, ...any)) error {
	cs, err := clientFor(st.Kubeconfig)
	if err != nil {
		return err
	}
	grace := int64(1)
	err = waitFor(ctx, 120*time.Second, "every pod deleted", nil, func(ctx context.Context) error {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return nil
		}
		sort.SliceStable(pods.Items, func(i, j int) bool {
			return pods.Items[i].Namespace == "tolokaforge-system" && pods.Items[j].Namespace != "tolokaforge-system"
		})
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				_ = cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
			}
		}
		return fmt.Errorf("%d pods left", len(pods.Items))
	})
	if err == nil {
		logf("deleted every pod")
	}
	return err
}

// killShims kills containerd-shim processes serving this cluster's containerd
// (their -address names its socket), found in /proc.
func killShims(sock string, logf func(string, ...any)) error {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || !strings.Contains(filepath.Base(args[0]), "containerd-shim") || !slices.Contains(args, sock) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		logf("killed leftover shim pid %d", pid)
	}
	return nil
}

// removeKubepodsCgroups kills what is left in kubelet's kubepods hierarchy and
// removes it, deepest first, in every cgroup v1 controller (and v2 if unified).
func removeKubepodsCgroups(logf func(string, ...any)) error {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if fileExists("/sys/fs/cgroup/kubepods") {
		roots = append(roots, "/sys/fs/cgroup/kubepods")
	}
	if fileExists("/sys/fs/cgroup/unified/kubepods") {
		roots = append(roots, "/sys/fs/cgroup/unified/kubepods")
	}
	var errs []error
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for _, d := range dirs {
			if b, err := os.ReadFile(filepath.Join(d, "cgroup.procs")); err == nil {
				for _, f := range strings.Fields(string(b)) {
					var pid int
					if _, err := fmt.Sscan(f, &pid); err == nil && pid > 1 {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
		}
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			var err error
			for range 50 { // a killed process leaves its cgroup a moment later
				if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("cluster: rmdir %s: %w", d, err))
			}
		}
	}
	if len(roots) > 0 && len(errs) == 0 {
		logf("removed kubepods cgroups")
	}
	return errors.Join(errs...)
}

// removeNetns unmounts and removes the /run/netns entries created since Up.
func removeNetns(st *State, logf func(string, ...any)) error {
	ents, err := os.ReadDir("/run/netns")
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range ents {
		if slices.Contains(st.Netns, e.Name()) || !strings.HasPrefix(e.Name(), "cni-") {
			continue
		}
		p := filepath.Join("/run/netns", e.Name())
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
		if err := os.Remove(p); err != nil {
			errs = append(errs, fmt.Errorf("cluster: remove %s: %w", p, err))
		} else {
			logf("removed netns %s", e.Name())
		}
	}
	return errors.Join(errs...)
}

// removeChains deletes the chains with the given prefixes from every table,
// with the jumps into them from other chains.
func removeChains(tool string, prefixes []string) error {
	if _, err := exec.LookPath(tool); err != nil {
		return nil
	}
	ours := func(c string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(c, p) {
				return true
			}
		}
		return false
	}
	var errs []error
	for _, table := range []string{"nat", "filter", "mangle", "raw"} {
		out, err := exec.Command(tool, "-w", "-t", table, "-S").Output()
		if err != nil {
			continue
		}
		var chains []string
		var jumps [][]string
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 2 && f[0] == "-N" && ours(f[1]):
				chains = append(chains, f[1])
			case len(f) > 2 && f[0] == "-A" && !ours(f[1]):
				if i := slices.Index(f, "-j"); i >= 0 && i+1 < len(f) && ours(f[i+1]) {
					jumps = append(jumps, f[1:])
				}
			}
		}
		for _, j := range jumps {
			// The rule as -S printed it, quotes and all, is what -D takes.
			cmd := exec.Command("sh", "-c", tool+" -w -t "+table+" -D "+strings.Join(j, " "))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("cluster: %s -t %s -D %s: %w: %s", tool, table, strings.Join(j, " "), err, out))
			}
		}
		for _, c := range chains {
			_ = exec.Command(tool, "-w", "-t", table, "-F", c).Run()
		}
		for _, c := range chains {
			if out, err := exec.Command(tool, "-w", "-t", table, "-X", c).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("cluster: %s -t %s -X %s: %w: %s", tool, table, c, err, out))
			}
		}
	}
	return errors.Join(errs...)
}

// unmountUnder detaches every mount below the given paths, deepest first.
func unmountUnder(paths []string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := strings.ReplaceAll(fields[4], `\040`, " ")
		for _, p := range paths {
			if p != "" && (mp == p || strings.HasPrefix(mp, p+"/")) {
				mounts = append(mounts, mp)
				break
			}
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	var errs []error
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("cluster: unmount %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// removeIPSets destroys the ipsets created since Up (kube-router's; named
// KUBE-*, inet6:KUBE-* or kube-router-*), after the rules naming them went.
func removeIPSets(st *State, logf func(string, ...any)) error {
	if _, err := exec.LookPath("ipset"); err != nil {
		return nil
	}
	var errs []error
	n := 0
	for _, s := range ipsets() {
		if slices.Contains(st.IPSets, s) {
			continue
		}
		name := strings.TrimPrefix(s, "inet6:")
		if !strings.HasPrefix(name, "KUBE-") && !strings.HasPrefix(name, "kube-router") {
			continue
		}
		if out, err := exec.Command("ipset", "destroy", s).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("cluster: ipset destroy %s: %w: %s", s, err, out))
			continue
		}
		n++
	}
	if n > 0 {
		logf("destroyed %d ipsets", n)
	}
	return errors.Join(errs...)
}
