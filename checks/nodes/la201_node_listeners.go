package nodes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// NodeListeners is LA201: on every node that carries one of our addresses, nothing else holds
// the Service ports on the wildcard or the node address. kube-proxy captures traffic to an
// externalIP before a local process sees it, so such a process is a silent conflict: it looks
// healthy and serves nobody, or serves in place of the Service where capture does not apply.
func NodeListeners(env *Env) engine.Check {
	return catalogue.Check("LA201", func(ctx context.Context) engine.Outcome { return nodeListeners(ctx, env) })
}

// nodeListenerResult is one node's verdict material.
type nodeListenerResult struct {
	node      listenerNode
	claims    []portClaim
	claimsErr error
	read      *nodeRead
	readErr   error
	// left is the helper pod that could not be deleted after the read.
	left *podexec.LeftPodsError
}

func nodeListeners(ctx context.Context, env *Env) engine.Outcome {
	if env.Setup == nil || (env.Setup.ProxyService == nil && env.Setup.DNSService == nil) {
		return engine.Outcome{Skip: "neither the proxy nor the DNS Service was found (name them with --proxy-service/--dns-service)"}
	}
	if !env.NoHelpers && env.Shells == nil {
		return engine.Outcome{Err: errors.New("no node shell provider in the environment (Env.Shells is nil)")}
	}
	owners, searched := placeUnlisted(ctx, env)
	proxy, dns := reachedServices(env.Setup)
	nodes, orphans := listenerNodes(env.Setup.Nodes, owners, proxy, dns)
	var findings []engine.Finding
	for _, a := range orphans {
		findings = append(findings, engine.Finding{Code: "LA201-NO-NODE", Severity: engine.SeverityInfo, Object: a.String(),
			Message: "no node lists this externalIP in status.addresses" + searched + ", so there is no node to read (LA101 reports it)"})
	}
	if len(nodes) == 0 {
		return engine.Outcome{Skip: "no node carries any of the Services' externalIPs (see LA101)", Findings: findings}
	}
	backends := map[string]bool{}
	for _, pods := range [][]corev1.Pod{env.Setup.ProxyPods, env.Setup.DNSPods} {
		for _, p := range pods {
			backends[p.Namespace+"/"+p.Name] = true
		}
	}

	results := make([]nodeListenerResult, len(nodes))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = readNode(ctx, env, n, backends)
		})
	}
	wg.Wait()

	var notPermitted, broken []string
	for _, r := range results {
		findings = append(findings, claimFindings(r)...)
		findings = append(findings, socketFindings(r)...)
		findings = append(findings, leftFinding(r)...)
		switch {
		case r.readErr != nil:
			var he *podexec.HelperError
			if errors.As(r.readErr, &he) && he.NotPermitted() {
				notPermitted = append(notPermitted, r.readErr.Error())
			} else {
				broken = append(broken, r.readErr.Error())
			}
		case r.read == nil && env.NoHelpers:
			notPermitted = append(notPermitted, "--no-helpers: the sockets of "+r.node.Node.Name+" were not read (doctor stays read-only; only the API's hostNetwork/hostPort pods were checked)")
		}
		if r.claimsErr != nil {
			broken = append(broken, r.claimsErr.Error())
		}
	}
	if engine.HasSeverity(findings, engine.SeverityFail) {
		// A known conflict stands; nodes that could not be read are said next to it.
		for _, why := range append(notPermitted, broken...) {
			findings = append(findings, engine.Finding{Code: "LA201-NOT-READ", Severity: engine.SeverityWarn, Message: "not read: " + why})
		}
		return engine.Outcome{Findings: findings}
	}
	if len(broken) > 0 {
		return engine.Outcome{Findings: findings, Err: errors.New(strings.Join(broken, "; "))}
	}
	if len(notPermitted) > 0 {
		return engine.Outcome{Findings: findings, Skip: strings.Join(notPermitted, "; ")}
	}
	return engine.Outcome{Findings: findings}
}

// placeUnlisted finds, through the run's node reader (shared with LA101, LA202 and LA203, so
// a node is read once), the nodes whose own stack carries an externalIP that no node's
// status.addresses list: a second NIC's address. searched completes "no node lists it" for
// the addresses still unplaced.
func placeUnlisted(ctx context.Context, env *Env) (owners map[netip.Addr][]string, searched string) {
	proxy, dns := reachedServices(env.Setup)
	unlisted := unlistedAddrs(env.Setup.Nodes, proxy, dns)
	if len(unlisted) == 0 {
		return nil, ""
	}
	if ok, why := env.Reader.Available(); !ok || env.NoHelpers {
		if why == "" {
			why = "--no-helpers"
		}
		return nil, noderead.NodeAddrs{NotRead: why}.Unfound()
	}
	placed := noderead.PlaceAddrs(ctx, env.Reader, env.Setup.Nodes, unlisted)
	owners = map[netip.Addr][]string{}
	for a, p := range placed.Places {
		for _, o := range p.Owners {
			owners[a] = append(owners[a], o.Node)
		}
	}
	searched = placed.Unfound()
	return owners, searched
}

func readNode(ctx context.Context, env *Env, n listenerNode, backends map[string]bool) nodeListenerResult {
	r := nodeListenerResult{node: n}
	pods, err := env.Pods.PodsOnNode(ctx, n.Node.Name)
	if err != nil {
		r.claimsErr = fmt.Errorf("listing the pods of node %s: %w", n.Node.Name, err)
	} else {
		r.claims = podClaims(n, ownPodsExcluded(pods), backends)
	}
	if env.NoHelpers {
		return r
	}
	sh, err := env.Shells.Open(ctx, n.Node)
	if err != nil {
		r.readErr = err
		return r
	}
	read, err := readNodeSockets(ctx, sh, n, env.execTimeout())
	// A helper that cannot be deleted is said, never dropped: it holds the node's network
	// until the kubelet ends it.
	if left, ok := errors.AsType[*podexec.LeftPodsError](sh.Close()); ok {
		r.left = left
	}
	if err != nil {
		r.readErr = fmt.Errorf("node %s: %w", n.Node.Name, err)
		return r
	}
	r.read = &read
	return r
}

// leftFinding is a helper pod this run could not delete.
func leftFinding(r nodeListenerResult) []engine.Finding {
	if r.left == nil {
		return nil
	}
	pods := make([]string, len(r.left.Pods))
	for i, p := range r.left.Pods {
		pods[i] = p.String()
	}
	return []engine.Finding{{Code: "LA201-HELPER-LEFT", Severity: engine.SeverityWarn, Object: r.node.object(),
		Message:     r.left.Error(),
		Evidence:    map[string]any{"pods": pods, "error": fmt.Sprint(r.left.Err)},
		Remediation: r.left.Cleanup}}
}

// ownPodsExcluded drops our helper pods: they are hostNetwork but claim no port.
func ownPodsExcluded(pods []corev1.Pod) []corev1.Pod {
	out := pods[:0:0]
	for _, p := range pods {
		if p.Labels[podexec.ManagedByLabel] != podexec.ManagedByValue {
			out = append(out, p)
		}
	}
	return out
}

func claimFindings(r nodeListenerResult) []engine.Finding {
	var out []engine.Finding
	for _, c := range r.claims {
		ev := map[string]any{"node": r.node.Node.Name, "pod": c.Pod.Namespace + "/" + c.Pod.Name, "container": c.Container,
			"port": c.Key.String(), "services": r.node.Ports[c.Key], "hostNetwork": c.HostNet}
		if c.HostIP != "" {
			ev["hostIP"] = c.HostIP
		}
		if c.Backend {
			out = append(out, engine.Finding{Code: "LA201-BACKEND-CLAIMS-PORT", Severity: engine.SeverityInfo, Object: r.node.object(), Evidence: ev,
				Message: c.describe() + "; it is one of the Service's own endpoints, so traffic reaches it either way"})
			continue
		}
		out = append(out, engine.Finding{Code: "LA201-POD-CLAIMS-PORT", Severity: engine.SeverityFail, Object: r.node.object(), Evidence: ev,
			Message: fmt.Sprintf("%s on %s, the port of %s: kube-proxy captures that traffic on the node address first, so one of them silently loses",
				c.describe(), r.node.Node.Name, strings.Join(r.node.Ports[c.Key], ", ")),
			Remediation: remedy.Commentf("# find the workload that owns the pod, then remove port %d from its hostPort/hostNetwork ports (or move the externalIP to another node)\n", c.Key.Port) +
				remedy.Kubectl(c.Pod.Namespace, "get", "pod", c.Pod.Name, "-o", `jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}{"\n"}`)})
	}
	return out
}

func socketFindings(r nodeListenerResult) []engine.Finding {
	if r.read == nil {
		return nil
	}
	var out []engine.Finding
	obj := r.node.object()
	for _, s := range r.read.Loopback {
		msg := fmt.Sprintf("%s on %s/%s is bound to loopback only: not reachable on the node address, not a conflict", s.Local, s.Key.Protocol, r.node.Node.Name)
		if isResolvedStub(s.Local) {
			msg = fmt.Sprintf("%s is systemd-resolved's stub listener: it is bound to loopback, not to the node address, so it is not a conflict", s.Local)
		}
		out = append(out, engine.Finding{Code: "LA201-LOOPBACK-ONLY", Severity: engine.SeverityInfo, Object: obj, Message: msg,
			Evidence: map[string]any{"socket": s.Local.String(), "protocol": s.Key.Protocol, "inode": s.Inode}})
	}
	claimedByBackend := map[servicePortKey]string{}
	for _, c := range r.claims {
		if c.Backend {
			claimedByBackend[c.Key] = c.Pod.Namespace + "/" + c.Pod.Name
		}
	}
	for _, s := range r.read.Conflicts {
		ev := map[string]any{"node": r.node.Node.Name, "socket": s.Local.String(), "protocol": s.Key.Protocol, "port": int(s.Key.Port),
			"services": r.node.Ports[s.Key], "inode": s.Inode, "uid": s.UID, "readVia": r.read.Via}
		who := "a process"
		if len(s.Owners) > 0 {
			ev["pid"] = s.Owners[0].PID
			ev["command"] = s.Owners[0].Command
			ev["owners"] = ownerText(s.Owners)
			who = ownerText(s.Owners)
		} else if r.read.OwnerNote != "" {
			ev["owner"] = r.read.OwnerNote
		}
		if pod, ok := claimedByBackend[s.Key]; ok {
			out = append(out, engine.Finding{Code: "LA201-BACKEND-LISTENS", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
				Message: fmt.Sprintf("%s holds %s/%s, the port its own Service's hostNetwork endpoint %s declares: not a conflict", who, s.Local, s.Key.Protocol, pod)})
			continue
		}
		bound := "the node address"
		if s.Wildcard() {
			bound = "every address (wildcard)"
			if s.Table.IPv6() {
				bound += ", IPv4 included unless the socket is IPV6_V6ONLY"
			}
		}
		msg := fmt.Sprintf("%s listens on %s/%s on %s, bound to %s: the port of %s, which kube-proxy captures on this node's address before the process sees it",
			who, s.Local, s.Key.Protocol, r.node.Node.Name, bound, strings.Join(r.node.Ports[s.Key], ", "))
		if len(s.Owners) == 0 && r.read.OwnerNote != "" {
			msg += " (" + r.read.OwnerNote + ")"
		}
		out = append(out, engine.Finding{Code: "LA201-PROCESS-LISTENS", Severity: engine.SeverityFail, Object: obj, Message: msg, Evidence: ev,
			Remediation: socketRemediation(r.node.Node.Name, s)})
	}
	if len(r.read.Conflicts) == 0 {
		ports := make([]string, 0, len(r.node.Ports))
		for _, k := range r.node.sortedPorts() {
			ports = append(ports, k.String())
		}
		ev := map[string]any{"readVia": r.read.Via, "ports": ports}
		if len(r.read.Missing) > 0 {
			ev["tablesAbsent"] = fmt.Sprint(r.read.Missing)
		}
		out = append(out, engine.Finding{Code: "LA201-CLEAN", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("nothing else listens on %s on the wildcard or the node address", strings.Join(ports, ", "))})
	}
	return out
}

func socketRemediation(node string, s nodeSocket) string {
	var b strings.Builder
	b.WriteString(remedy.Commentf("# on %s (ssh, or: %s)\n", node, remedy.Command("kubectl", "debug", "node/"+node, "-it", "--image="+podexec.DefaultHelperImage, "--", "chroot", "/host", "sh")))
	fmt.Fprintf(&b, "ss -%slpn 'sport = :%d'\n", map[string]string{"tcp": "t", "udp": "u"}[s.Key.Protocol], s.Key.Port)
	if len(s.Owners) > 0 {
		fmt.Fprintf(&b, "systemctl status %d   # names the unit that started it\n", s.Owners[0].PID)
	}
	b.WriteString("# then stop it (systemctl disable --now UNIT) or make it listen on 127.0.0.1 or another port")
	return b.String()
}
