package config

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// DNSPolicyDefault is the patch that makes the DNS pods inherit the node's resolvers, so
// `forward . /etc/resolv.conf` never reaches the cluster DNS (LA105, LA304).
func DNSPolicyDefault(ns, deployment string) string {
	return remedy.MergePatch(ns, "deployment", deployment, map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"dnsPolicy": "Default"}}}})
}

// DNSDeployment is LA105: the zone DNS survives a pod or node going away. systemd-resolved
// moves to the next DNS server on the first failure and stays there until the link comes back,
// so even a short outage sends workstations to the organisation's DNS (the public VPN
// address) for a long time: two replicas on different nodes, a PodDisruptionBudget keeping
// one, dnsPolicy Default so `forward . /etc/resolv.conf` uses the node's resolver (not the
// cluster DNS), NET_BIND_SERVICE kept when ALL capabilities are dropped (the official image's
// binary carries that file capability and cannot even be executed without it), non-root.
func DNSDeployment(env *Env) engine.Check {
	return check(env, "LA105", dnsDeployment)
}

func dnsDeployment(s *kube.Setup) engine.Outcome {
	ns := s.DNSService.Namespace
	unread := unreadOf(s, "LA105", ns)
	dep := s.DNSWorkload
	if dep == nil {
		if len(s.DNSPods) == 0 {
			return engine.Partial("LA105", []engine.Finding{{Code: "LA105-NO-WORKLOAD", Severity: engine.SeverityFail, Object: kubeobj.ServiceRef(s.DNSService),
				Message:     "no Deployment or pod matches the Service's selector: nothing serves the zone",
				Remediation: remedy.Kubectl(ns, "get", "deployments,pods", "--show-labels")}}, unread)
		}
		// A DaemonSet (the hostPort form, issue 26) or bare pods: what LA105 judges is a
		// Deployment's, so nothing was judged, and unknown is never a PASS.
		return engine.Partial("LA105", []engine.Finding{{Code: "LA105-NOT-A-DEPLOYMENT", Severity: engine.SeverityWarn, Object: kubeobj.ServiceRef(s.DNSService),
			Message: "the DNS pods are not managed by a Deployment (a DaemonSet, or bare pods): their replicas, spread, PodDisruptionBudget, rollout safety (lameduck, readiness) and pod hardening are not judged; review them by hand"}}, unread)
	}
	obj := fmt.Sprintf("Deployment %s/%s", dep.Namespace, dep.Name)
	spec := &dep.Spec.Template.Spec
	var findings []engine.Finding
	replicas := int32(1)
	if dep.Spec.Replicas != nil {
		replicas = *dep.Spec.Replicas
	}
	if replicas < 2 {
		findings = append(findings, engine.Finding{Code: "LA105-ONE-REPLICA", Severity: engine.SeverityWarn, Object: obj,
			Message:     fmt.Sprintf("%d replica: a restart or a node drain leaves no DNS, and systemd-resolved then stays on the organisation's DNS (the public VPN address) until the link reconnects", replicas),
			Evidence:    map[string]any{"replicas": replicas},
			Remediation: kube.ManagedNote(dep, "Deployment", "spec.replicas") + remedy.Kubectl(dep.Namespace, "scale", "deployment/"+dep.Name, "--replicas=2")})
	}
	if replicas >= 2 {
		if f, ok := spreadFinding(dep, obj); ok {
			findings = append(findings, f)
		}
	}
	findings = append(findings, pdbFindings(s.PDBs, dep, replicas, obj)...)
	findings = append(findings, dnsPolicyFinding(s, spec, obj, dep)...)
	findings = append(findings, capabilityFindings(spec, obj, dep)...)
	findings = append(findings, probeFindings(s, spec, obj)...)
	findings = append(findings, rootFindings(spec, obj, dep)...)
	findings = append(findings, hardeningFindings(spec, obj, dep)...)
	findings = append(findings, rolloutFindings(s, dep, replicas, obj)...)
	findings = append(findings, placementFindings(s.DNSPods, obj, notReadyCause(s, spec))...)
	return engine.Partial("LA105", findings, unread)
}

// spreadFinding: nothing keeps two replicas off the same node.
func spreadFinding(dep *appsv1.Deployment, obj string) (engine.Finding, bool) {
	spec := dep.Spec.Template.Spec
	for _, c := range spec.TopologySpreadConstraints {
		if c.TopologyKey == corev1.LabelHostname && c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return engine.Finding{}, false
		}
	}
	if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey == corev1.LabelHostname {
				return engine.Finding{}, false
			}
		}
	}
	return engine.Finding{Code: "LA105-NO-SPREAD", Severity: engine.SeverityWarn, Object: obj,
		Message: "nothing keeps the replicas on different nodes (no topologySpreadConstraint on kubernetes.io/hostname with DoNotSchedule, no required anti-affinity): one node failure can take them all",
		Remediation: remedy.MergePatch(dep.Namespace, "deployment", dep.Name, map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"topologySpreadConstraints": []any{map[string]any{"maxSkew": 1, "topologyKey": corev1.LabelHostname, "whenUnsatisfiable": "DoNotSchedule",
				"labelSelector": map[string]any{"matchLabels": dep.Spec.Template.Labels}}}}}}})}, true
}

// pdbKeepOne makes a budget keep one pod and let the others go.
func pdbKeepOne(p policyv1.PodDisruptionBudget) string {
	return remedy.MergePatch(p.Namespace, "pdb", p.Name, map[string]any{"spec": map[string]any{"minAvailable": 1, "maxUnavailable": nil}})
}

// pdbFindings: a PodDisruptionBudget must keep at least one pod through a drain, and still
// let a drain proceed.
func pdbFindings(pdbs []policyv1.PodDisruptionBudget, dep *appsv1.Deployment, replicas int32, obj string) []engine.Finding {
	var matching []policyv1.PodDisruptionBudget
	for _, p := range pdbs {
		if p.Namespace != dep.Namespace || p.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
			matching = append(matching, p)
		}
	}
	if len(matching) == 0 {
		return []engine.Finding{{Code: "LA105-NO-PDB", Severity: engine.SeverityWarn, Object: obj,
			Message: "no PodDisruptionBudget: a node drain may evict every replica at once",
			// a manifest, not the API type: its status (all zeros) is not for people to apply
			Remediation: remedy.Apply(remedy.YAML(map[string]any{
				"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
				"metadata": metav1.ObjectMeta{Name: dep.Name, Namespace: dep.Namespace},
				"spec": policyv1.PodDisruptionBudgetSpec{MinAvailable: new(intstr.FromInt32(1)),
					Selector: &metav1.LabelSelector{MatchLabels: dep.Spec.Template.Labels}},
			}))}}
	}
	var out []engine.Finding
	for _, p := range matching {
		keep, ok := pdbKeeps(p, replicas)
		pobj := fmt.Sprintf("PodDisruptionBudget %s/%s", p.Namespace, p.Name)
		ev := map[string]any{"replicas": replicas, "keeps": keep}
		switch {
		case !ok:
			continue
		case keep < 1:
			out = append(out, engine.Finding{Code: "LA105-PDB-PROTECTS-NOTHING", Severity: engine.SeverityWarn, Object: pobj, Evidence: ev,
				Message:     fmt.Sprintf("keeps %d of %d pods through a drain: it protects nothing", keep, replicas),
				Remediation: pdbKeepOne(p)})
		case keep >= replicas:
			out = append(out, engine.Finding{Code: "LA105-PDB-BLOCKS-DRAINS", Severity: engine.SeverityWarn, Object: pobj, Evidence: ev,
				Message:     fmt.Sprintf("keeps %d of %d pods: no pod may ever be evicted, so node drains block", keep, replicas),
				Remediation: pdbKeepOne(p)})
		}
	}
	return out
}

// pdbKeeps is how many pods the budget keeps with this many replicas.
func pdbKeeps(p policyv1.PodDisruptionBudget, replicas int32) (int32, bool) {
	scaled := func(v *intstr.IntOrString, roundUp bool) (int32, bool) {
		n, err := intstr.GetScaledValueFromIntOrPercent(v, int(replicas), roundUp)
		return int32(min(n, int(replicas))), err == nil //nolint:gosec // G115: at most replicas, an int32
	}
	if p.Spec.MinAvailable != nil {
		return scaled(p.Spec.MinAvailable, true)
	}
	if p.Spec.MaxUnavailable != nil {
		n, ok := scaled(p.Spec.MaxUnavailable, true)
		return replicas - n, ok
	}
	return 0, false
}

// dnsPolicyFinding: with ClusterFirst, `forward . /etc/resolv.conf` forwards the LAN's
// queries to the cluster DNS, which answers *.svc.cluster.local names to the whole LAN.
func dnsPolicyFinding(s *kube.Setup, spec *corev1.PodSpec, obj string, dep *appsv1.Deployment) []engine.Finding {
	policy := spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	clusterDNS := policy == corev1.DNSClusterFirst && !spec.HostNetwork ||
		policy == corev1.DNSClusterFirstWithHostNet
	if !clusterDNS {
		return nil
	}
	viaResolvConf := true
	if cf := s.Corefile; cf != nil {
		viaResolvConf = false
		for i := range cf.Blocks {
			for _, up := range cf.Blocks[i].Forwarders() {
				if strings.Contains(up, "resolv.conf") {
					viaResolvConf = true
				}
			}
		}
	}
	f := engine.Finding{Code: "LA105-CLUSTER-FIRST-HARMLESS", Object: obj, Evidence: map[string]any{"dnsPolicy": string(policy)},
		Remediation: kube.ManagedNote(dep, "Deployment", "spec.template.spec.dnsPolicy") + DNSPolicyDefault(dep.Namespace, dep.Name)}
	if viaResolvConf {
		f.Code, f.Severity = "LA105-CLUSTER-FIRST", engine.SeverityFail
		f.Message = fmt.Sprintf("dnsPolicy %s: the pod's /etc/resolv.conf points at the cluster DNS, so `forward . /etc/resolv.conf` sends the LAN's queries there and cluster-internal names (*.svc.cluster.local) resolve for the whole LAN", policy)
	} else {
		f.Severity = engine.SeverityInfo
		f.Message = fmt.Sprintf("dnsPolicy %s: harmless while the Corefile forwards to explicit upstreams, but the seed uses Default so that /etc/resolv.conf is the node's", policy)
	}
	return []engine.Finding{f}
}

// capabilityFindings: CoreDNS images whose binary carries the NET_BIND_SERVICE file
// capability (coredns/coredns Dockerfile: setcap cap_net_bind_service=+ep, since v1.11.0) cannot
// be executed when ALL is dropped and it is not added back. Container runtimes read capability
// names without regard to case: `drop: [all]` is ALL and `add: [net_bind_service]` is
// NET_BIND_SERVICE (containerd internal/cri/opts/spec_opts.go WithCapabilities with
// internal/cri/util/strings.go InStringSlice, strings.EqualFold and "CAP_"+strings.ToUpper;
// CRI-O internal/factory/container/container.go SpecSetupCapabilities, inStringSlice with
// strings.EqualFold and "CAP_"+strings.ToUpper).
func capabilityFindings(spec *corev1.PodSpec, obj string, dep *appsv1.Deployment) []engine.Finding {
	var out []engine.Finding
	for i, c := range spec.Containers {
		if !netBindDropped(c) {
			continue
		}
		caps := c.SecurityContext.Capabilities
		out = append(out, engine.Finding{Code: "LA105-NET-BIND-DROPPED", Severity: engine.SeverityFail, Object: obj,
			Message:  fmt.Sprintf("container %s drops ALL capabilities (%s) without adding NET_BIND_SERVICE back (the runtime reads the names without regard to case): the CoreDNS binary carries that file capability, so the kernel refuses to run it (exec /coredns: operation not permitted), whatever the port", c.Name, capNames(caps.Drop)),
			Evidence: map[string]any{"container": c.Name, "image": c.Image, "drop": caps.Drop, "add": caps.Add},
			Remediation: kube.ManagedNote(dep, "Deployment", "spec.template.spec.containers") + remedy.JSONPatch(dep.Namespace, "deployment", dep.Name, remedy.PatchOp{Op: "add",
				Path: fmt.Sprintf("/spec/template/spec/containers/%d/securityContext/capabilities/add", i), Value: append(append([]corev1.Capability{}, caps.Add...), "NET_BIND_SERVICE")})})
	}
	return out
}

// netBindDropped: a CoreDNS container that drops ALL and does not add NET_BIND_SERVICE (or ALL).
func netBindDropped(c corev1.Container) bool {
	if !strings.Contains(strings.ToLower(c.Image), "coredns") || c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
		return false
	}
	caps := c.SecurityContext.Capabilities
	return hasCap(caps.Drop, "ALL") && !hasCap(caps.Add, "NET_BIND_SERVICE") && !hasCap(caps.Add, "ALL")
}

// hasCap compares capability names as the runtimes do: without regard to case.
func hasCap(list []corev1.Capability, name string) bool {
	for _, c := range list {
		if strings.EqualFold(string(c), name) {
			return true
		}
	}
	return false
}

func capNames(list []corev1.Capability) string {
	out := make([]string, 0, len(list))
	for _, c := range list {
		out = append(out, string(c))
	}
	return strings.Join(out, ", ")
}

// placementFindings: the ready pods run on distinct nodes.
func placementFindings(pods []corev1.Pod, obj string, cause string) []engine.Finding {
	byNode := map[string][]string{}
	var notReady []string
	for i := range pods {
		p := &pods[i]
		if !kubeobj.PodReady(p) {
			notReady = append(notReady, fmt.Sprintf("%s (%s)", p.Name, kubeobj.PodState(p)))
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p.Name)
	}
	var out []engine.Finding
	nodes := make([]string, 0, len(byNode))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		if len(byNode[n]) < 2 {
			continue
		}
		out = append(out, engine.Finding{Code: "LA105-SAME-NODE", Severity: engine.SeverityWarn, Object: obj,
			Message:  fmt.Sprintf("ready pods %s all run on node %s: losing that node stops the zone DNS", strings.Join(byNode[n], ", "), n),
			Evidence: map[string]any{"node": n, "pods": byNode[n]},
			Remediation: "# after adding a topologySpreadConstraint on kubernetes.io/hostname:\n" +
				remedy.Kubectl(podNamespace(pods), "delete", "pod", byNode[n][len(byNode[n])-1])})
	}
	if len(notReady) > 0 {
		sev := engine.SeverityWarn
		if len(nodes) == 0 {
			sev = engine.SeverityFail
		}
		msg := fmt.Sprintf("%d of %d DNS pods are not ready: %s", len(notReady), len(pods), strings.Join(notReady, ", "))
		if cause != "" {
			msg += "; the spec explains it: " + cause
		}
		out = append(out, engine.Finding{Code: "LA105-PODS-NOT-READY", Severity: sev, Object: obj,
			Message:     msg,
			Evidence:    map[string]any{"notReady": notReady, "cause": cause},
			Remediation: remedy.Kubectl(podNamespace(pods), "describe", "pods", strings.Fields(notReady[0])[0])})
	}
	return out
}

func podNamespace(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return ""
	}
	return pods[0].Namespace
}
