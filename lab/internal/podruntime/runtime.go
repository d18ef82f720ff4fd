package podruntime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// PodsDevice is the port-less bridge in each node namespace that carries pod IPs.
const PodsDevice = "pods0"

// StartedAnnotation is set on a pod once its processes run and listen on every port its
// containers declare: the lab's kwok stages make the pod Ready only then (kwok's own stage
// makes it Ready at once, so an endpoint would get traffic before anything listens; a real
// kubelet with a readiness probe would wait).
const StartedAnnotation = "lab.lanaccess.io/started"

// Runtime reconciles the pods bound to lab nodes with processes and addresses.
type Runtime struct {
	Layout  layout.Layout
	Bins    binaries.Set
	Pods    func() ([]*corev1.Pod, error)
	Cluster Cluster
	Log     *log.Logger
	// MarkStarted sets StartedAnnotation on a pod.
	MarkStarted func(ctx context.Context, pod *corev1.Pod) error
	// Token requests a token of the pod's ServiceAccount bound to the pod, as the kubelet does
	// for its projected token volume.
	Token func(ctx context.Context, pod *corev1.Pod) ([]byte, error)

	// lastErr avoids logging the same failure every resync.
	lastErr map[string]string
}

// podMeta is written into each pod directory so that teardown works from disk alone (after a
// daemon restart the pod may be gone from the API).
type podMeta struct {
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	IP        string `json:"ip"`
	// NetNS is the pod's own network namespace ("" when it shares its node's).
	NetNS string `json:"netns,omitempty"`
}

// Reconcile brings processes and addresses in line with the API once.
func (r *Runtime) Reconcile(ctx context.Context) error {
	if r.lastErr == nil {
		r.lastErr = map[string]string{}
	}
	pods, err := r.Pods()
	if err != nil {
		return err
	}
	nodes := map[string]layout.Node{}
	for _, n := range r.Layout.Nodes {
		nodes[n.NS] = n
	}
	desired := map[string]*corev1.Pod{}
	ipsByNode := map[string][]string{}
	for _, p := range pods {
		if _, ok := nodes[p.Spec.NodeName]; !ok || !Scheduled(p) {
			continue
		}
		desired[PodDirName(p)] = p
		if !OwnNamespace(nodes[p.Spec.NodeName], p) {
			ipsByNode[p.Spec.NodeName] = append(ipsByNode[p.Spec.NodeName], p.Status.PodIP)
		}
	}
	var errs []error
	// Old pods first: a Recreate rollout must free its ports and rules before the new pod
	// starts in the same namespace.
	entries, err := os.ReadDir(r.Layout.PodsDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if _, ok := desired[e.Name()]; !ok && e.IsDir() {
			if err := r.teardown(ctx, filepath.Join(r.Layout.PodsDir(), e.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, n := range r.Layout.Nodes {
		if err := syncAddresses(ctx, n, ipsByNode[n.NS]); err != nil {
			errs = append(errs, err)
		}
	}
	names := make([]string, 0, len(desired))
	for name := range desired {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := desired[name]
		err := r.ensurePod(ctx, p, nodes[p.Spec.NodeName])
		if err == nil && p.Annotations[StartedAnnotation] != "true" {
			err = r.markIfListening(ctx, p, nodes[p.Spec.NodeName])
		}
		r.report(name, err)
	}
	return errors.Join(errs...)
}

// Scheduled reports whether a pod is one the runtime should run: bound, Running with an IP, not
// being deleted, with its own pod IP.
func Scheduled(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.PodIP != "" && p.DeletionTimestamp == nil &&
		!p.Spec.HostNetwork && p.Status.Phase == corev1.PodRunning
}

func (r *Runtime) report(key string, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if r.lastErr[key] != msg {
		if err != nil {
			r.Log.Printf("pod %s: %v", key, err)
		} else if r.lastErr[key] != "" {
			r.Log.Printf("pod %s: recovered", key)
		}
		r.lastErr[key] = msg
	}
}

// PodDirName is the directory of a pod under layout.PodsDir: its files, pid files and the logs
// of its containers (<container>.log).
func PodDirName(p *corev1.Pod) string {
	return fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID)
}

func (r *Runtime) ensurePod(ctx context.Context, p *corev1.Pod, node layout.Node) error {
	dir := filepath.Join(r.Layout.PodsDir(), PodDirName(p))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	metaPath := filepath.Join(dir, "pod.json")
	if _, err := os.Stat(metaPath); err != nil {
		meta := podMeta{UID: string(p.UID), Namespace: p.Namespace, Name: p.Name, Node: node.NS, IP: p.Status.PodIP}
		if OwnNamespace(node, p) {
			meta.NetNS = PodNetNS(p.UID)
		}
		b, _ := json.Marshal(meta)
		if err := os.WriteFile(metaPath, b, 0o600); err != nil {
			return err
		}
	}
	nodeResolv, err := os.ReadFile(filepath.Join(layout.ResolvConfDir(node.NS), "resolv.conf"))
	if err != nil {
		return fmt.Errorf("node %s resolv.conf: %w", node.NS, err)
	}
	resolv := []byte(ResolvConf(p, string(nodeResolv), r.Layout.ClusterDNSIP))
	resolvPath := filepath.Join(dir, "resolv.conf")
	if _, err := writeIfChanged(resolvPath, resolv, false); err != nil {
		return err
	}
	if OwnNamespace(node, p) {
		if err := r.ensureSandbox(ctx, dir, p, node, resolv); err != nil {
			return err
		}
	}
	var errs []error
	for _, c := range p.Spec.Containers {
		run := runnerFor(c.Image)
		if run == nil {
			continue
		}
		if err := r.ensureContainer(ctx, p, node, dir, c, run, resolvPath); err != nil {
			errs = append(errs, fmt.Errorf("container %s: %w", c.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (r *Runtime) ensureContainer(ctx context.Context, p *corev1.Pod, node layout.Node, dir string, c corev1.Container, run runner, resolvPath string) error {
	execNS := ProcessNS(p, node)
	mgr := procs.Manager{PidDir: dir, LogDir: dir}
	appliedPath := filepath.Join(dir, c.Name+".applied")
	matchPath := filepath.Join(dir, c.Name+".match")
	prevMatch, alive, applied := previous(mgr, c.Name, matchPath, appliedPath)
	pc, vf, err := r.containerContext(p, node, dir, c, resolvPath, applied)
	if err != nil {
		return err
	}
	pl, err := run.plan(pc)
	if err != nil {
		return err
	}
	digest, err := writeFiles(pl.Argv, vf, pl.Files)
	if err != nil {
		return err
	}
	digestPath := filepath.Join(dir, c.Name+".digest")
	prevDigest, _ := os.ReadFile(digestPath)

	if !alive || prevMatch != pl.Match {
		if alive {
			_ = mgr.Stop(ctx, c.Name, prevMatch)
		}
		if _, _, err := mgr.Start(procs.Spec{Name: c.Name, NS: execNS, Argv: pl.Argv, Dir: dir}); err != nil {
			return err
		}
		r.Log.Printf("pod %s/%s: started %s on %s (%s)", p.Namespace, p.Name, c.Name, node.NS, pl.Argv[0])
		if pl.OnStart != nil {
			if err := pl.OnStart(ctx); err != nil {
				return fmt.Errorf("after start: %w", err)
			}
		}
		return saveState(matchPath, pl.Match, appliedPath, pl.Applied, digestPath, digest)
	}
	if string(prevDigest) == digest {
		return nil
	}
	switch pl.OnChange {
	case Restart:
		if err := mgr.Stop(ctx, c.Name, pl.Match); err != nil {
			return err
		}
		if _, _, err := mgr.Start(procs.Spec{Name: c.Name, NS: execNS, Argv: pl.Argv, Dir: dir}); err != nil {
			return err
		}
		if pl.OnStart != nil {
			if err := pl.OnStart(ctx); err != nil {
				return fmt.Errorf("after restart: %w", err)
			}
		}
		r.Log.Printf("pod %s/%s: restarted %s after a config change", p.Namespace, p.Name, c.Name)
	case Signal:
		if err := mgr.Signal(c.Name, pl.Match, pl.Sig); err != nil {
			return err
		}
		r.Log.Printf("pod %s/%s: %s reloaded its config (%s)", p.Namespace, p.Name, c.Name, pl.Sig)
	case Ignore:
		// The files changed but the running process does not look: keep what it loaded.
		r.Log.Printf("pod %s/%s: %s config changed on disk; the running process does not reload it", p.Namespace, p.Name, c.Name)
		return os.WriteFile(digestPath, []byte(digest), 0o600)
	}
	return saveState(matchPath, pl.Match, appliedPath, pl.Applied, digestPath, digest)
}

// containerContext is what a runner gets for container c: its volumes' files and the paths
// they map, and how to run commands where its processes run.
func (r *Runtime) containerContext(p *corev1.Pod, node layout.Node, dir string, c corev1.Container, resolvPath, applied string) (*podContext, volumeFiles, error) {
	vf, pm, err := materialize(r.Cluster, p, c, dir)
	if err != nil {
		return nil, vf, err
	}
	// A container has its own /tmp (OpenVPN's status file lives there).
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, vf, err
	}
	pm = append(pm, PathMapping{Container: "/etc/resolv.conf", Host: resolvPath}, PathMapping{Container: "/tmp", Host: tmp})
	execNS := ProcessNS(p, node)
	pc := &podContext{Pod: p, Node: node, Dir: dir, Container: c, Paths: pm, Files: vf.files,
		Layout: r.Layout, Bins: r.Bins, Cluster: r.Cluster, Applied: applied,
		Exec: func(ctx context.Context, argv ...string) (string, error) { return netns.Run(ctx, execNS, argv...) }}
	if r.Token != nil {
		pc.Token = func(ctx context.Context) ([]byte, error) { return r.Token(ctx, p) }
	}
	if OwnNamespace(node, p) {
		pc.OwnNamespace = true
		pc.RouteToPod = func(ctx context.Context, prefixes ...string) error { return routeToPod(ctx, node, dir, p, prefixes) }
	}
	return pc, vf, nil
}

// previous reads what the runtime recorded of a container: the string that identifies the
// process it started, whether that process still runs, and the configuration it applied then.
func previous(mgr procs.Manager, name, matchPath, appliedPath string) (match string, alive bool, applied string) {
	b, _ := os.ReadFile(matchPath)
	if match = string(b); match == "" {
		return "", false, ""
	}
	if _, alive = mgr.Pid(name, match); !alive {
		return match, false, ""
	}
	b, _ = os.ReadFile(appliedPath)
	return match, true, string(b)
}

// writeFiles writes a container's files (its volumes' and those its plan generates) and returns
// a digest of its command line and of the files as they are on disk: when it changes, the
// container's configuration did.
func writeFiles(argv []string, vf volumeFiles, generated map[string][]byte) (string, error) {
	files := map[string][]byte{}
	maps.Copy(files, vf.files)
	maps.Copy(files, generated)
	paths := make([]string, 0, len(files))
	for path := range files {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	h := sha256.New()
	// A hash.Hash never returns a write error.
	_, _ = fmt.Fprintln(h, strings.Join(argv, "\x00"))
	for _, path := range paths {
		if _, err := writeIfChanged(path, files[path], vf.writeOnce[path]); err != nil {
			return "", err
		}
		onDisk, _ := os.ReadFile(path)
		_, _ = fmt.Fprintf(h, "%s\x00%x\n", path, sha256.Sum256(onDisk))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func saveState(matchPath, match, appliedPath, applied, digestPath, digest string) error {
	for path, v := range map[string]string{matchPath: match, appliedPath: applied, digestPath: digest} {
		if err := os.WriteFile(path, []byte(v), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// writeIfChanged writes b to path when its content differs (so file watchers see real
// changes only); a write-once path (subPath mount) is never updated after it exists.
func writeIfChanged(path string, b []byte, writeOnce bool) (bool, error) {
	old, err := os.ReadFile(path)
	if err == nil && (writeOnce || string(old) == string(b)) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	tmp := path + ".tmp"
	// gosec G703: path comes from the pod's volumes, kept under the pod's directory by project.
	if err := os.WriteFile(tmp, b, 0o600); err != nil { //nolint:gosec // see above
		return false, err
	}
	return true, os.Rename(tmp, path)
}

// ProcessNS is the network namespace a pod's processes run in: its own on a dedicated node,
// else its node's.
func ProcessNS(p *corev1.Pod, node layout.Node) string {
	if OwnNamespace(node, p) {
		return PodNetNS(p.UID)
	}
	return node.NS
}

// teardown stops a pod's processes, removes the iptables rules its containers added and its
// directory.
func (r *Runtime) teardown(ctx context.Context, dir string) error {
	var meta podMeta
	if b, err := os.ReadFile(filepath.Join(dir, "pod.json")); err == nil {
		_ = json.Unmarshal(b, &meta)
	}
	mgr := procs.Manager{PidDir: dir, LogDir: dir}
	matchFiles, _ := filepath.Glob(filepath.Join(dir, "*.match"))
	var errs []error
	for _, mf := range matchFiles {
		name := strings.TrimSuffix(filepath.Base(mf), ".match")
		match, _ := os.ReadFile(mf)
		if len(match) == 0 {
			continue
		}
		if err := mgr.Stop(ctx, name, string(match)); err != nil {
			errs = append(errs, err)
		}
	}
	if meta.Node != "" && meta.UID != "" {
		if err := DeleteRulesWithComment(ctx, meta.Node, "lab-pod:"+meta.UID); err != nil {
			errs = append(errs, err)
		}
	}
	if meta.NetNS != "" && len(errs) == 0 {
		// The CNI's DEL first (host-local's lease, portmap's rules), as the runtime's
		// StopPodSandbox; then the namespace, and the veth pair and the node's routes with it.
		if sb, err := ReadSandbox(dir); err == nil {
			if node, err := r.Layout.Node(meta.Node); err != nil {
				errs = append(errs, err)
			} else if err := r.cniDel(ctx, node, podRef{UID: meta.UID, Namespace: meta.Namespace, Name: meta.Name}, sb); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if meta.NetNS != "" && len(errs) == 0 {
		if ok, err := netns.Exists(ctx, meta.NetNS); err != nil {
			errs = append(errs, err)
		} else if ok {
			if err := netns.Delete(ctx, meta.NetNS); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
		r.Log.Printf("pod %s/%s: gone, stopped its processes", meta.Namespace, meta.Name)
	}
	return errors.Join(errs...)
}

// DeleteRulesWithComment removes every nat rule in ns tagged with comment.
func DeleteRulesWithComment(ctx context.Context, ns, comment string) error {
	out, err := netns.Run(ctx, ns, "iptables", "-t", "nat", "-S")
	if err != nil {
		return err
	}
	for line := range strings.SplitSeq(out, "\n") {
		if !strings.HasPrefix(line, "-A ") || !strings.Contains(line, comment) {
			continue
		}
		args := append([]string{"iptables", "-t", "nat", "-D"}, netns.SplitRule(line)[1:]...)
		if _, err := netns.Run(ctx, ns, args...); err != nil {
			return err
		}
	}
	return nil
}

// syncAddresses makes the pods0 addresses of a node exactly the IPs of its pods.
func syncAddresses(ctx context.Context, n layout.Node, ips []string) error {
	have, err := netns.Addrs(ctx, n.NS, PodsDevice)
	if err != nil {
		return err
	}
	want := map[netip.Addr]bool{}
	for _, s := range ips {
		if ip, err := netip.ParseAddr(s); err == nil {
			want[ip] = true
		}
	}
	var errs []error
	for _, ip := range have {
		if !want[ip] {
			if err := netns.DelAddr(ctx, n.NS, PodsDevice, ip.String()+"/32"); err != nil {
				errs = append(errs, err)
			}
		}
		delete(want, ip)
	}
	for ip := range want {
		if err := netns.AddAddr(ctx, n.NS, PodsDevice, ip.String()+"/32"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// markIfListening sets StartedAnnotation once every declared port of the containers the lab
// runs is bound in the namespace they run in (on the pod IP or the wildcard).
func (r *Runtime) markIfListening(ctx context.Context, p *corev1.Pod, node layout.Node) error {
	var want []string
	for _, c := range p.Spec.Containers {
		if runnerFor(c.Image) == nil {
			continue
		}
		for _, port := range c.Ports {
			proto := strings.ToLower(string(port.Protocol))
			if proto == "" {
				proto = "tcp"
			}
			want = append(want, fmt.Sprintf("%s %d", proto, port.ContainerPort))
		}
	}
	if len(want) > 0 {
		out, err := netns.Run(ctx, ProcessNS(p, node), "ss", "-Hlntu")
		if err != nil {
			return err
		}
		if missing := unbound(out, p.Status.PodIP, want); len(missing) > 0 {
			return nil // not yet: the next resync looks again
		}
	}
	if r.MarkStarted == nil {
		return nil
	}
	return r.MarkStarted(ctx, p)
}

// unbound returns the "proto port" entries of want that no listening socket in ss output
// (`ss -Hlntu`) covers on ip or on the wildcard.
func unbound(ssOut, ip string, want []string) []string {
	have := map[string]bool{}
	for line := range strings.SplitSeq(ssOut, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		i := strings.LastIndexByte(f[4], ':')
		if i < 0 {
			continue
		}
		addr, port := strings.Trim(f[4][:i], "[]"), f[4][i+1:]
		if addr == ip || addr == "0.0.0.0" || addr == "*" {
			have[f[0]+" "+port] = true
		}
	}
	var missing []string
	for _, w := range want {
		if !have[w] {
			missing = append(missing, w)
		}
	}
	return missing
}
