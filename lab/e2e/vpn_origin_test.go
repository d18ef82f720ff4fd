//go:build lab

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// Issue 14's vpn-trace judgements that need the nodes: where the VPN pod's ip_forward comes
// from (the kernel's copy, then the CNI's write, then the pod spec) and whether the nodes route
// the client pool back. The VPN pod has a network namespace of its own on node-vpn, whose own
// ip_forward is 1; the nodes are provisioned with Calico's CNI configuration; InstallCNI makes a
// CNI's DaemonSet run (its hostNetwork pods are what vpn-trace reads the nodes through). Every
// value is the real kernel's, read in the lab's namespaces.

// findingByCode is the one finding of check id with code; the test fails without it.
func findingByCode(t *testing.T, r lanaccessRun, id, code string) engine.Finding {
	t.Helper()
	_, _, fs := r.check(t, id)
	for _, f := range fs {
		if f.Code == code {
			return f
		}
	}
	t.Fatalf("no %s among %s's findings:\n%s", code, id, findingText(fs))
	return engine.Finding{}
}

// rolloutRestart is `kubectl rollout restart` of the VPN Deployment, then its rollout: a new
// pod, in a new network namespace.
func rolloutRestartVPN(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := lab.Kubectl(ctx, "-n", "vpn", "rollout", "restart", "deployment/openvpn")
	require.NoError(t, err, out)
	lab.WaitRollout(t, "vpn", "openvpn")
}

func TestVPNTraceNamesCalicoAsTheOriginOfTheZeroAndItsCNIFixRoundTrips(t *testing.T) {
	lab.InstallCNI(t, "calico")
	require.True(t, lab.IPForward(t, lab.VPNNode().Name), "node-vpn itself forwards")
	require.False(t, lab.VPNPodIPForward(t), "Calico's plugin wrote 0 into the pod")

	r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN002,VPN003")
	status, _, fs := r.check(t, "VPN002")
	assert.Equal(t, "fail", status, findingText(fs))
	findingByCode(t, r, "VPN003", "VPN003-OFF-NOT-IN-MANIFEST")
	origin := findingByCode(t, r, "VPN003", "VPN003-ORIGIN-CNI")
	assert.Contains(t, origin.Message, "Calico's CNI plugin writes 0 (container_settings.allow_ip_forwarding is not true in node node-vpn's /host/etc/cni/net.d/10-calico.conflist)")
	assert.Contains(t, fmt.Sprint(origin.Evidence["originUnknown"]), "but that is not the kernel's initial network namespace",
		"node-vpn is not the initial namespace: what a new pod copies is not read, and not needed (Calico writes after it)")
	assert.Contains(t, origin.Remediation, "kubectl -n kube-system patch configmap calico-config --type=merge")
	assert.Contains(t, origin.Remediation, "kubectl -n kube-system rollout restart daemonset/calico-node")
	assert.Contains(t, origin.Remediation, "kubectl -n vpn rollout restart deployment/openvpn")

	// Least privilege without the opt-in rbac-node-read: no exec into kube-system, so node-vpn
	// is not read. VPN003 says so, and names Calico's 0 from what the API shows (the ConfigMap),
	// not from the node's file.
	sa := lab.SwapRBAC(t, "vpn-no-node-read", shippedGrants(t, "", "rbac-doctor", "rbac-vpn-exec")...)
	narrow := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN002,VPN003", "--kubeconfig", sa)
	status, _, fs = narrow.check(t, "VPN003")
	assert.NotEqual(t, "pass", status, findingText(fs))
	fromAPI := findingByCode(t, narrow, "VPN003", "VPN003-ORIGIN-CNI")
	assert.Contains(t, fromAPI.Message, "is not true in the ConfigMap kube-system/calico-config")
	assert.NotContains(t, fromAPI.Message, "/host/etc/cni/net.d", "the node's file was not read")
	unread := fmt.Sprint(fromAPI.Evidence["originUnknown"])
	assert.Contains(t, unread, "node node-vpn was not read")
	assert.Regexp(t, `pod kube-system/calico-node-\S+, container calico-node: .*cannot create resource "pods/exec" in API group "" in the namespace "kube-system"`, unread)

	// The fix as printed: the ConfigMap patch, calico-node's restart (its install step renders
	// the new template), then a new VPN pod, which Calico's plugin gives 1.
	lab.ApplyRemedy(t, origin.Remediation)
	lab.WaitDaemonSet(t, "kube-system", "calico-node")
	lab.WaitRollout(t, "vpn", "openvpn")
	assert.True(t, lab.VPNPodIPForward(t), "the new pod's namespace has 1")
	waitTunnel(t)

	r = runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn")
	status, _, fs = r.check(t, "VPN002")
	assert.Equal(t, "pass", status, findingText(fs))
	byCNI := findingByCode(t, r, "VPN003", "VPN003-SET-BY-CNI")
	assert.Equal(t, engine.SeverityInfo, byCNI.Severity)
	assert.Contains(t, byCNI.Message, "Calico's CNI plugin writes 1 (container_settings.allow_ip_forwarding is true in node node-vpn's /host/etc/cni/net.d/10-calico.conflist)")
	vs, v := verdict(t, r)
	assert.Equal(t, "pass", vs, "%s\nVPN006:\n%s", v.Message, hopLines(t, r, "VPN006"))
	assert.Equal(t, "VPN008-WORKS", v.Code, v.Message)
}

func TestVPNTraceCallsAOneThatANewPodLosesAHandFix(t *testing.T) {
	lab.InstallCNI(t, "calico")
	waitTunnel(t)
	lab.SetVPNPodIPForward(t, true)
	r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN002,VPN003")
	status, _, fs := r.check(t, "VPN002")
	assert.Equal(t, "pass", status, findingText(fs))
	hand := findingByCode(t, r, "VPN003", "VPN003-HAND-FIX")
	assert.Contains(t, hand.Message, "a new pod starts with 0 (Calico's CNI plugin writes 0")
	assert.Contains(t, hand.Message, "a container restart keeps it, a new pod")
	assert.Contains(t, hand.Remediation, "# or, once for the cluster and without privilege, let the CNI write 1")

	// The kernel agrees: a container restart keeps the pod's namespace and its value...
	lab.KillVPNContainer(t)
	assert.True(t, lab.VPNPodIPForward(t), "the restarted container is in the same pod namespace")
	waitTunnel(t)
	r = runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN002")
	status, _, fs = r.check(t, "VPN002")
	assert.Equal(t, "pass", status, findingText(fs))

	// ...a new pod starts over from the CNI's 0.
	rolloutRestartVPN(t)
	assert.False(t, lab.VPNPodIPForward(t), "the new pod's namespace has Calico's 0")
	r = runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN002")
	status, _, fs = r.check(t, "VPN002")
	assert.Equal(t, "fail", status, findingText(fs))
}

func TestVPNTraceUnderFlannelCannotTellTheOriginThroughANodeThatIsNotTheInitialNamespace(t *testing.T) {
	lab.InstallCNI(t, "flannel")
	rolloutRestartVPN(t) // a pod that flannel's configuration set up: no CNI write
	initial := strings.TrimSpace(lab.MustExec(t, "", "cat", "/proc/sys/net/ipv4/ip_forward"))
	require.True(t, lab.IPForward(t, lab.VPNNode().Name), "node-vpn itself forwards")
	assert.Equal(t, initial == "1", lab.VPNPodIPForward(t),
		"the pod's namespace copied the kernel's initial namespace (%s), not node-vpn's (1)", initial)

	r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN002,VPN003")
	code := "VPN003-ORIGIN-UNKNOWN"
	if initial == "1" {
		code = "VPN003-UNEXPLAINED-ONE"
	}
	f := findingByCode(t, r, "VPN003", code)
	assert.Contains(t, f.Message, "but that is not the kernel's initial network namespace")
	assert.Contains(t, f.Message, "node node-vpn's CNI configuration was not read: no container of the pod read",
		"kube-flannel's container does not mount /etc/cni/net.d")

	lab.SetVPNPodIPForward(t, true)
	r = runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN002,VPN003")
	one := findingByCode(t, r, "VPN003", "VPN003-UNEXPLAINED-ONE")
	assert.Contains(t, one.Message, "whether a new pod gets 1 too could not be told", "not called a hand fix")
	_, _, fs := r.check(t, "VPN003")
	for _, f := range fs {
		assert.NotEqual(t, "VPN003-HAND-FIX", f.Code, f.Message)
	}
}

var routedBackVia = regexp.MustCompile(`node (node-\d) routes 10\.8\.0\.0/24 via 10\.0\.10\.14 dev eth0 \(10\.8\.0\.0/24 via 10\.0\.10\.14 dev eth0[^)]*\)`)

func TestVPNTraceReadsTheNodesRoutesBackToThePool(t *testing.T) {
	lab.InstallCNI(t, "calico")
	lab.DropMasquerade(t)
	vpnPod := lab.VPNPod(t)
	onward := fmt.Sprintf("node node-vpn routes 10.8.0.0/24 via %s dev %s", vpnPod.Status.PodIP, "veth")

	r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN005")
	status, _, fs := r.check(t, "VPN005")
	assert.Equal(t, "pass", status, findingText(fs))
	back := findingByCode(t, r, "VPN005", "VPN005-ROUTED-BACK")
	m := routedBackVia.FindStringSubmatch(back.Message)
	require.NotNil(t, m, back.Message)
	dnsNodes := map[string]bool{}
	for _, p := range runningPods(t, "kube-system", "k8s-app=kube-dns") {
		dnsNodes[p.Spec.NodeName] = true
	}
	assert.True(t, dnsNodes[m[1]], "the ladder's pod (a cluster DNS pod) runs on %s", m[1])
	assert.Contains(t, back.Message, onward)
	assert.NotContains(t, back.Message, "advertised by BGP")

	t.Run("advertised by BGP", func(t *testing.T) {
		lab.ReturnRoutesByBGP(t)
		r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN005")
		back := findingByCode(t, r, "VPN005", "VPN005-ROUTED-BACK")
		assert.Contains(t, back.Message, "via 10.0.10.14 dev eth0 proto bird), advertised by BGP")
	})

	lab.DropReturnRoute(t)
	r = runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN005")
	status, _, fs = r.check(t, "VPN005")
	assert.Equal(t, "fail", status, findingText(fs))
	none := findingByCode(t, r, "VPN005", "VPN005-NO-MASQUERADE")
	assert.Contains(t, none.Message, fmt.Sprintf("node %s (the ladder's pod's) has neither a route to 10.8.0.0/24 nor a default route: its replies to the pool are dropped there", m[1]))
}

// A masquerade limited to the tunnel (`-o tun0`) is not a masquerade of the packets the ladder
// sends out of eth0: with no route back to the pool, VPN005 says so and names the rule, where it
// used to call the pool masqueraded. Putting the image's own rule back (`-o eth0`) passes.
func TestVPN005JudgesTheMasqueradeByThePacketsTheLadderSends(t *testing.T) {
	lab.DropReturnRoute(t)
	t.Run("scoped to tun0", func(t *testing.T) {
		lab.ScopeMasquerade(t, "tun0")
		r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN005")
		status, _, fs := r.check(t, "VPN005")
		require.Equal(t, "fail", status, findingText(fs))
		f := findingByCode(t, r, "VPN005", "VPN005-MASQUERADE-SCOPE")
		assert.Contains(t, f.Message, "-o tun0 -j MASQUERADE")
		assert.Contains(t, f.Message, "leave through eth0")
		assert.Contains(t, f.Remediation, "MASQUERADE")
	})
	r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN005")
	status, _, fs := r.check(t, "VPN005")
	assert.Equal(t, "pass", status, findingText(fs))
	findingByCode(t, r, "VPN005", "VPN005-MASQUERADED")
}

// --prove-fixes asks the lab's API server (its PodSecurity admission) about a pod carrying
// each forwarding fix, with dryRun=All: under enforce=baseline both are refused in the API
// server's own words, and nothing is stored; without the label the initContainer is admitted.
func TestVPN003ProvesTheFixWithTheAPIServersDryRun(t *testing.T) {
	setPodSecurity := func(t *testing.T, level string) {
		t.Helper()
		value := "null"
		if level != "" {
			value = `"` + level + `"`
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := lab.Client.CoreV1().Namespaces().Patch(ctx, "vpn", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":`+value+`}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	admission := func(t *testing.T, args ...string) any {
		t.Helper()
		r := runLanaccess(t, "", vpnTraceTimeout, append([]string{"vpn-trace", "-n", "vpn", "--only", "VPN001,VPN002,VPN003"}, args...)...)
		return findingByCode(t, r, "VPN003", "VPN003-OFF-NOT-IN-MANIFEST").Evidence["admission"]
	}
	podsBefore := len(runningPods(t, "vpn", ""))

	setPodSecurity(t, "baseline")
	t.Cleanup(func() { setPodSecurity(t, "") })
	adm, ok := admission(t, "--prove-fixes").(map[string]any)
	require.True(t, ok, "the dry-run answers are in the evidence: %v", adm)
	assert.Contains(t, fmt.Sprint(adm["initContainer"]), `refused (dry-run)`)
	assert.Contains(t, fmt.Sprint(adm["initContainer"]), `violates PodSecurity "baseline:latest"`)
	assert.Contains(t, fmt.Sprint(adm["initContainer"]), "privileged")
	assert.Contains(t, fmt.Sprint(adm["securityContext.sysctls"]), "forbidden sysctls")
	assert.Len(t, runningPods(t, "vpn", ""), podsBefore, "a dry-run stores nothing")

	setPodSecurity(t, "")
	adm, ok = admission(t, "--prove-fixes").(map[string]any)
	require.True(t, ok, "%v", adm)
	assert.Equal(t, "admitted (dry-run)", adm["initContainer"])

	assert.Contains(t, fmt.Sprint(admission(t)), "--prove-fixes", "without the flag, the evidence says it is not proven")
}
