package facts

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// cniConfDir is where the kubelet's container runtime reads CNI configurations by default.
const cniConfDir = "/etc/cni/net.d"

// nodeReadAttempts bounds the hostNetwork pods tried per node.
const nodeReadAttempts = 3

// nodeScript reads the node's ip_forward, the kernel's inheritance setting and the CNI
// configuration files in dir (at most 16, 64 KiB each).
func nodeScript(dir string) string {
	script := `echo "@@forward"; cat /proc/sys/net/ipv4/ip_forward 2>&1
echo "@@inherit"; cat /proc/sys/net/core/devconf_inherit_init_net 2>&1
echo "@@route"; cat /proc/net/route 2>&1
echo "@@iproute"; ip -4 -o route show 2>/dev/null | head -n 2000
`
	if dir != "" {
		q := remedy.Quote(dir)
		script += `n=0; for f in ` + q + `/*.conf ` + q + `/*.conflist ` + q + `/*.json; do [ -f "$f" ] || continue; n=$((n+1)); [ "$n" -gt 16 ] && break; echo "@@file $f"; head -c 65536 "$f"; echo; done
`
	}
	return script + `echo "@@end"`
}

// readNode reads the node through the hostNetwork pods on it that a trusted system DaemonSet
// controls (podexec.TrustedNodeReaders, confirmed through the API: a tenant's hostNetwork pod
// would answer whatever its image prints), those mounting the CNI configuration directory
// first (the CNI's own), a few at most.
func (g *Gatherer) readNode(ctx context.Context, node string) NodeRead {
	r := NodeRead{Node: node}
	if node == "" {
		r.Err = errors.New("the pod has no node")
		return r
	}
	bigEndian := false
	if n, err := g.seams.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err == nil {
		r.KernelVersion = n.Status.NodeInfo.KernelVersion
		bigEndian = n.Status.NodeInfo.Architecture == "s390x" // /proc/net/route prints in CPU order
	}
	pods, err := g.seams.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		r.Err = fmt.Errorf("listing the pods of node %s: %w", node, err)
		return r
	}
	cands := g.trusted(ctx, hostNetworkReaders(pods.Items, node), pods.Items)
	if len(cands) == 0 {
		r.Err = fmt.Errorf("no running pod of a trusted system DaemonSet (%s) on node %s to read it through", trustedNames(), node)
		return r
	}
	for i, c := range cands {
		if i == nodeReadAttempts {
			break
		}
		out, _, err := g.execIn(ctx, c.ref, c.container, []string{"sh", "-c", nodeScript(c.confDir)}, g.execTimeout())
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("pod %s, container %s: %v", c.ref, c.container, err))
			continue
		}
		if perr := parseNodeRead(out, &r, bigEndian); perr != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("pod %s, container %s: %v", c.ref, c.container, perr))
			continue
		}
		r.Via, r.ConfDir = fmt.Sprintf("pod %s, container %s", c.ref, c.container), c.confDir
		return r
	}
	r.Err = fmt.Errorf("no hostNetwork pod on node %s could be read (%s)", node, strings.Join(r.Notes, "; "))
	return r
}

// trusted keeps the readers whose pod a trusted system DaemonSet controls.
func (g *Gatherer) trusted(ctx context.Context, cands []nodeReader, pods []corev1.Pod) []nodeReader {
	byRef := map[podexec.PodRef]*corev1.Pod{}
	for i := range pods {
		byRef[podexec.PodRef{Namespace: pods[i].Namespace, Name: pods[i].Name}] = &pods[i]
	}
	var out []nodeReader
	for _, c := range cands {
		if p := byRef[c.ref]; p != nil {
			if _, ok := g.trust.Of(ctx, p); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

func trustedNames() string {
	readers := podexec.TrustedNodeReaders()
	names := make([]string, 0, len(readers))
	for _, r := range readers {
		names = append(names, r.String())
	}
	return strings.Join(names, ", ")
}

// nodeReader is a hostNetwork pod's container to read the node through.
type nodeReader struct {
	ref       podexec.PodRef
	container string
	// confDir is where the container mounts the node's CNI configuration ("" when it does not).
	confDir string
}

// hostNetworkReaders lists the running hostNetwork pods' containers on node, those that mount
// the node's CNI configuration directory first.
func hostNetworkReaders(pods []corev1.Pod, node string) []nodeReader {
	var out []nodeReader
	for _, p := range pods {
		if p.Spec.NodeName != node || !p.Spec.HostNetwork || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		ref := podexec.PodRef{Namespace: p.Namespace, Name: p.Name}
		container, dir := cniMount(p)
		if container == "" {
			container = firstRunning(p)
		}
		if container != "" {
			out = append(out, nodeReader{ref: ref, container: container, confDir: dir})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].confDir != "") != (out[j].confDir != "") {
			return out[i].confDir != ""
		}
		return out[i].ref.String() < out[j].ref.String()
	})
	return out
}

// cniMount is the running container that mounts the node's CNI configuration directory, and
// where.
func cniMount(p corev1.Pod) (string, string) {
	vols := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		if v.HostPath != nil && strings.TrimRight(v.HostPath.Path, "/") == cniConfDir {
			vols[v.Name] = true
		}
	}
	for _, c := range p.Spec.Containers {
		if !containerRunning(&p, c.Name) {
			continue
		}
		for _, m := range c.VolumeMounts {
			if vols[m.Name] && m.SubPath == "" {
				return c.Name, m.MountPath
			}
		}
	}
	return "", ""
}

func firstRunning(p corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil {
			return cs.Name
		}
	}
	return ""
}

// parseNodeRead reads nodeScript's output into r.
func parseNodeRead(out string, r *NodeRead, bigEndian bool) error {
	if !strings.Contains(out, "@@end") {
		return errors.New("the output was cut")
	}
	var cur string
	var body strings.Builder
	flush := func() {
		text := strings.TrimSpace(body.String())
		switch {
		case cur == "forward" && (text == "0" || text == "1"):
			r.Forward = text
		case cur == "inherit" && len(text) == 1 && text >= "0" && text <= "3":
			r.Inherit = text
		case cur == "route":
			r.Routes = linuxnet.ParseProcRoute(text, bigEndian)
		case cur == "iproute":
			for l := range strings.SplitSeq(text, "\n") {
				if l = strings.TrimSpace(l); l != "" {
					r.IPRoutes = append(r.IPRoutes, l)
				}
			}
		case strings.HasPrefix(cur, "file "):
			f := CNIFile{Path: strings.TrimPrefix(cur, "file ")}
			f.Config, f.Err = ParseCNIConfig(text)
			r.Files = append(r.Files, f)
		}
		body.Reset()
	}
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, "@@") {
			flush()
			cur = strings.TrimPrefix(line, "@@")
			continue
		}
		body.WriteString(line + "\n")
	}
	flush()
	sort.SliceStable(r.Files, func(i, j int) bool { return r.Files[i].Path < r.Files[j].Path })
	if r.Forward == "" {
		return errors.New("ip_forward was not readable")
	}
	return nil
}
