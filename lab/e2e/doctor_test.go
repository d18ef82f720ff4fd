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
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/lab/labkit"
)

// Each test breaks the live lab for real (kernel, processes, API objects), runs the plugin as a
// workstation would, and proves the check fails on the broken setup; the fault is undone by
// t.Cleanup, and TestDoctorPassesOnTheHealthyLab proves the same checks pass when fixed.

var anyTemplate = regexp.MustCompile(`(?s)\n\s*template ANY ANY \{[^}]*\}`)

func TestDoctorPassesOnTheHealthyLab(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	r := doctor(t)
	require.Equal(t, 0, r.Code, "statuses %s\nstderr %s", r.statuses(), r.Stderr)
	for _, c := range r.Doc.Checks {
		if c.ID == "LA203" {
			// The lab's links are veths: no negotiated speed to compare, and LA203 says so.
			assert.Equal(t, "skip", c.Status, "%+v", c.Findings)
			assert.Contains(t, c.Reason, "nothing to compare")
			continue
		}
		if c.ID == "LA402" {
			// The laptop's resolver gives the public address, behind the (broken by default)
			// VPN: no second path answers, and an unknown comparison is a SKIP that says so.
			assert.Equal(t, "skip", c.Status, "%+v", c.Findings)
			require.NotEmpty(t, c.Findings)
			assert.Equal(t, "LA402-NO-SECOND-PATH", c.Findings[0].Code)
			continue
		}
		assert.Contains(t, []string{"pass", "warn"}, c.Status, "%s: %+v", c.ID, c.Findings)
	}
	// Every catalogue entry ran: nothing else skipped on a healthy lab with helpers allowed.
	require.Len(t, r.Doc.Checks, 18)
	assert.Equal(t, 2, r.Doc.Summary["skip"], r.statuses())
	assert.Equal(t, "pass", r.check(t, "LA301").Status)
	assert.Equal(t, "pass", r.check(t, "LA401").Status)
	assert.Equal(t, "pass", r.check(t, "LA201").Status)
	t.Logf("healthy doctor: %s in %s", r.statuses(), r.Elapsed)
}

// The dead node carries an address but none of the Services' pods: with the proxy pod's node
// dead, kube-proxy would send part of the :443 connections of every address into the void, and
// every address would rightly fail.
func TestDoctorNamesOnlyTheDeadNodeAndCostsOneTimeout(t *testing.T) {
	dead := nodeWithoutServicePods(t)
	// LA402 is skipped: from the lab laptop, the system resolver (resolved, on DHCP's server)
	// gives the public address, which sits behind the (broken by default) VPN tunnel: HTTPS to
	// it costs its own timeout in both runs.
	healthy := doctor(t, "--no-helpers", "--timeout", "2s", "--skip", "LA402")
	require.Equal(t, 0, healthy.Code, healthy.statuses())

	lab.LinkDown(t, dead.Name)
	r := doctor(t, "--no-helpers", "--timeout", "2s", "--skip", "LA402")
	assert.Equal(t, 1, r.Code, r.statuses())
	for _, id := range []string{"LA301", "LA401"} {
		c := r.check(t, id)
		assert.Equal(t, "fail", c.Status, "%s %+v", id, c.Findings)
		assert.Equal(t, []string{dead.Name + " (" + dead.IP + ")"}, unique(c.objects("fail")), "%s names the dead node only", id)
	}
	// That the dead address costs one probe timeout is proven by counting its contacts
	// (checks/netpath TestADeadNodeCostsOneTimeoutAcrossTheWholeNetworkCatalogue) and measured
	// by make bench; a wall-time assertion here only measured the machine's load.
	t.Logf("wall time: healthy %s, %s dead %s (probe timeout 2s)", healthy.Elapsed, dead.Name, r.Elapsed)
}

func TestDoctorFailsLA302WhenTheCatchAllTemplateIsRemoved(t *testing.T) {
	lab.EditLanDNSCorefile(t, func(s string) string {
		out := anyTemplate.ReplaceAllString(s, "")
		require.NotEqual(t, s, out, "the lab's Corefile has the catch-all template")
		return out
	})
	eventually(t, 30*time.Second, func() error {
		r := doctor(t, "--only", "LA302", "--no-helpers")
		if c := r.check(t, "LA302"); c.Status != "fail" {
			return errorf("LA302 is %s after the reload", c.Status)
		}
		return nil
	})
	r := doctor(t, "--only", "LA104,LA302", "--no-helpers")
	assert.Equal(t, "fail", r.check(t, "LA104").Status, "the Corefile check sees it too")
	assert.Equal(t, 1, r.Code)
}

func TestDoctorFailsLA101AndLA301WhenAnAddressIsDroppedFromTheZone(t *testing.T) {
	lab.EditLanDNSCorefile(t, func(s string) string {
		return regexp.MustCompile(`\n[^\n]*IN A 10\.0\.10\.13"`).ReplaceAllString(s, "")
	})
	eventually(t, 30*time.Second, func() error {
		r := doctor(t, "--only", "LA301", "--no-helpers")
		if c := r.check(t, "LA301"); c.Status != "fail" {
			return errorf("LA301 is %s after the reload", c.Status)
		}
		return nil
	})
	r := doctor(t, "--only", "LA101,LA301", "--no-helpers")
	la101 := r.check(t, "LA101")
	assert.Equal(t, "fail", la101.Status, "%+v", la101.Findings)
	assert.True(t, la101.mentions("fail", "10.0.10.13") || strings.Contains(strings.Join(la101.objects("fail"), " "), "lan-dns"), "%+v", la101.Findings)
	assert.Equal(t, "fail", r.check(t, "LA301").Status)
}

func TestDoctorFailsLA304WhenTheDNSPodsUseClusterFirst(t *testing.T) {
	lab.SetDNSPolicy(t, "traefik", "lan-dns", corev1.DNSClusterFirst)
	r := doctor(t, "--only", "LA105,LA304", "--no-helpers")
	c := r.check(t, "LA304")
	assert.Equal(t, "fail", c.Status, "%+v", c.Findings)
	assert.True(t, c.mentions("fail", "cluster.local"), "%+v", c.Findings)
	assert.Equal(t, "fail", r.check(t, "LA105").Status, "the Deployment check names dnsPolicy too")
}

func TestDoctorFailsLA401WhenTheProxyServesACertificateForAnotherHost(t *testing.T) {
	lab.ServeWrongCertificate(t, labkit.CertWrongHost)
	r := doctor(t, "--only", "LA401", "--no-helpers")
	c := r.check(t, "LA401")
	assert.Equal(t, "fail", c.Status, "%+v", c.Findings)
	assert.Len(t, c.objects("fail"), 3, "every node serves the wrong certificate")
	assert.True(t, c.mentions("fail", "grafana.apps.example.com"), "%+v", c.Findings)
	// The real Traefik does not serve a Secret's certificate for a name it does not cover: no
	// certificate it holds covers grafana's, so it serves its own default one.
	for _, f := range c.Findings {
		if f.Severity == "fail" {
			assert.Equal(t, "LA401-DEFAULT-CERT", f.Code, "%+v", f)
		}
	}
}

// The slow node must not host the proxy pod: kube-proxy sends every address's traffic to that
// pod, so a slow NIC there slows all addresses alike (which LA403 rightly does not flag).
func TestDoctorWarnsLA403WhenOneNodeIsSlow(t *testing.T) {
	slow := nodeWithoutProxy(t)
	lab.AddLatency(t, slow.Name, 200*time.Millisecond)
	r := doctor(t, "--only", "LA403", "--no-helpers")
	c := r.check(t, "LA403")
	assert.Equal(t, "warn", c.Status, "%+v", c.Findings)
	require.NotEmpty(t, c.objects("warn"))
	for _, obj := range c.objects("warn") {
		assert.Equal(t, slow.Name+" ("+slow.IP+")", obj, "only the slow node is named")
	}
}

func unique(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// podNodes lists the nodes running pods of selector in the traefik namespace.
func podNodes(t *testing.T, selector string) map[string]bool {
	t.Helper()
	return podNodesIn(t, "traefik", selector)
}

// podNodesIn is podNodes for the pods of another namespace.
func podNodesIn(t *testing.T, namespace, selector string) map[string]bool {
	t.Helper()
	pods, err := lab.Client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	hosts := map[string]bool{}
	for _, p := range pods.Items {
		hosts[p.Spec.NodeName] = true
	}
	return hosts
}

const (
	proxySelector = "app.kubernetes.io/name=traefik"
	dnsSelector   = "app=lan-dns"
)

// pathPods are the pods on the path of a LAN probe: the proxy and lan-dns, and behind the real
// Traefik its forward-auth server and the cluster DNS Traefik resolves the server's name with.
var pathPods = []struct{ namespace, selector, deployment string }{
	{"traefik", proxySelector, "traefik"}, {"traefik", dnsSelector, "lan-dns"},
	{"auth", "app.kubernetes.io/name=forward-auth", "forward-auth"}, {"kube-system", "k8s-app=kube-dns", "coredns"},
}

// nodeWithoutServicePods returns a LAN node that runs none of the pathPods; when every node
// runs one, it cordons node-3 and moves that node's pods away (undone at cleanup).
func nodeWithoutServicePods(t *testing.T) labkit.Node {
	t.Helper()
	hosts := func() map[string]bool {
		on := map[string]bool{}
		for _, p := range pathPods {
			for n := range podNodesIn(t, p.namespace, p.selector) {
				on[n] = true
			}
		}
		return on
	}
	busy := hosts()
	for _, n := range lab.Nodes {
		if !n.Dedicated && !busy[n.Name] {
			return n
		}
	}
	n, err := lab.Node("node-3")
	require.NoError(t, err)
	ctx := context.Background()
	setUnschedulable := func(on bool) error {
		patch := []byte(fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on))
		_, err := lab.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	require.NoError(t, setUnschedulable(true))
	t.Cleanup(func() { _ = setUnschedulable(false) })
	for _, p := range pathPods {
		if podNodesIn(t, p.namespace, p.selector)[n.Name] {
			lab.RestartPods(t, p.namespace, p.selector, p.deployment)
		}
	}
	lab.WaitProxySynced(t)
	require.False(t, hosts()[n.Name], "pods moved off %s", n.Name)
	return n
}

func nodeWithoutProxy(t *testing.T) labkit.Node {
	t.Helper()
	hosts := podNodes(t, proxySelector)
	require.NotEmpty(t, hosts, "the lab runs a traefik pod")
	for _, n := range lab.Nodes {
		if !n.Dedicated && !hosts[n.Name] {
			return n
		}
	}
	t.Fatal("every node hosts the proxy")
	return labkit.Node{}
}

// Without reload the zone still answers, but the next ConfigMap edit will not: a warning.
// reload is process-wide in CoreDNS (one block's reload restarts every block: proven on the real
// binary by checks/config TestReloadInOneBlockReloadsEveryBlock), so LA104 warns only when no
// block has it.
func TestDoctorWarnsLA104WhenReloadIsRemoved(t *testing.T) {
	// Registered first, so it runs last, after the Corefile is restored: a CoreDNS running
	// without reload never reads the restored Corefile (as on a real cluster), so the DNS pods
	// are replaced, or every later test would run against this test's Corefile.
	t.Cleanup(func() { lab.RestartPods(t, "traefik", dnsSelector, "lan-dns") })
	lab.EditLanDNSCorefile(t, func(s string) string {
		require.GreaterOrEqual(t, strings.Count(s, "    reload\n"), 2, "the lab's Corefile has reload in both blocks")
		return strings.Replace(s, "    reload\n", "", 1)
	})
	c := doctor(t, "--only", "LA104", "--no-helpers").check(t, "LA104")
	assert.False(t, c.mentions("warn", "reload"), "another block still reloads the whole server: %+v", c.Findings)

	lab.EditLanDNSCorefile(t, func(s string) string { return strings.ReplaceAll(s, "    reload\n", "") })
	c = doctor(t, "--only", "LA104", "--no-helpers").check(t, "LA104")
	assert.Equal(t, "warn", c.Status, "%+v", c.Findings)
	assert.True(t, c.mentions("warn", "reload"), "%+v", c.Findings)
}

// CVE-2020-8554 for real: a Service in another namespace claims one of our addresses on 443.
func TestDoctorFailsLA106WhenAnotherServiceClaimsOurAddress(t *testing.T) {
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "intercept", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			ExternalIPs: []string{"10.0.10.12"},
			Ports:       []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)}},
			Selector:    map[string]string{"app": "nothing"},
		},
	}
	_, err := lab.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = lab.Client.CoreV1().Services("default").Delete(context.Background(), "intercept", metav1.DeleteOptions{})
	})

	r := doctor(t, "--only", "LA0,LA1", "--no-helpers", "--proxy-service", "traefik/traefik")
	c := r.check(t, "LA106")
	assert.Equal(t, "fail", c.Status, "%+v", c.Findings)
	assert.Contains(t, strings.Join(c.objects("fail"), " "), "default/intercept")
	assert.Equal(t, 1, r.Code)
}

// A route without authentication in the zone is now reachable by the whole LAN.
func TestDoctorFailsLA107ForARouteWithoutAuthentication(t *testing.T) {
	ctx := context.Background()
	ing := ingressWithoutAuth()
	_, err := lab.Client.NetworkingV1().Ingresses("monitoring").Create(ctx, ing, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = lab.Client.NetworkingV1().Ingresses("monitoring").Delete(context.Background(), ing.Name, metav1.DeleteOptions{})
	})
	r := doctor(t, "--only", "LA107", "--no-helpers", "--host", probeHost)
	c := r.check(t, "LA107")
	assert.Contains(t, []string{"warn", "fail"}, c.Status, "%+v", c.Findings)
	assert.True(t, c.mentions(c.Status, "open-dashboard"), "%+v", c.Findings)
}

// RBAC for real: a ServiceAccount that may read Services but nothing else gets SKIPs that name
// the missing verb and resource, never a false PASS or FAIL.
func TestDoctorUnderMissingRBACSkipsNamingTheVerb(t *testing.T) {
	kubeconfig := lab.SwapRBAC(t, "doctor-narrow", labkit.Grant{Rules: labkit.ReadOnlyRules("services", "nodes")})
	r := runPlugin(t, "doctor", "-o", "json", "--no-helpers", "--kubeconfig", kubeconfig, "--only", "LA0,LA1")
	require.NotEqual(t, 0, r.Code, r.Stdout+r.Stderr)
	text := r.Stdout + r.Stderr
	assert.Regexp(t, `(?i)(list|get) (configmaps|pods|endpointslices|deployments)`, text)
}

func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }

func ingressWithoutAuth() *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "open-dashboard", Namespace: "monitoring"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: "open-dashboard.apps.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &prefix,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "grafana", Port: networkingv1.ServiceBackendPort{Number: 3000}}},
			}}}},
		}}},
	}
}

// LA102 for real: the proxy scaled to zero has no ready endpoint behind its externalIPs.
func TestDoctorFailsLA102WhenTheProxyHasNoReadyPod(t *testing.T) {
	ctx := context.Background()
	scale, err := lab.Client.AppsV1().Deployments("traefik").GetScale(ctx, "traefik", metav1.GetOptions{})
	require.NoError(t, err)
	replicas := scale.Spec.Replicas
	setReplicas := func(n int32) error {
		s, err := lab.Client.AppsV1().Deployments("traefik").GetScale(ctx, "traefik", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = n
		_, err = lab.Client.AppsV1().Deployments("traefik").UpdateScale(ctx, "traefik", s, metav1.UpdateOptions{})
		return err
	}
	require.NoError(t, setReplicas(0))
	t.Cleanup(func() {
		require.NoError(t, setReplicas(replicas))
		eventually(t, time.Minute, func() error {
			if r := doctor(t, "--only", "LA102", "--no-helpers"); r.check(t, "LA102").Status == "fail" {
				return errorf("the proxy is not back")
			}
			return nil
		})
		lab.WaitProxySynced(t)
	})
	eventually(t, time.Minute, func() error {
		r := doctor(t, "--only", "LA102", "--no-helpers")
		if c := r.check(t, "LA102"); c.Status != "fail" {
			return errorf("LA102 is %s with the proxy scaled to 0", c.Status)
		}
		return nil
	})
}

// LA103 for real: the DNS Service's targetPort no longer names the container port.
func TestDoctorFailsLA103WhenTheDNSServiceTargetsTheWrongPort(t *testing.T) {
	ctx := context.Background()
	svc, err := lab.Client.CoreV1().Services("traefik").Get(ctx, "lan-dns", metav1.GetOptions{})
	require.NoError(t, err)
	orig := svc.DeepCopy()
	for i := range svc.Spec.Ports {
		svc.Spec.Ports[i].TargetPort = intstr.FromInt32(1054)
	}
	_, err = lab.Client.CoreV1().Services("traefik").Update(ctx, svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		cur, err := lab.Client.CoreV1().Services("traefik").Get(ctx, "lan-dns", metav1.GetOptions{})
		require.NoError(t, err)
		cur.Spec.Ports = orig.Spec.Ports
		_, err = lab.Client.CoreV1().Services("traefik").Update(ctx, cur, metav1.UpdateOptions{})
		require.NoError(t, err)
		lab.WaitProxySynced(t)
	})
	r := doctor(t, "--only", "LA103", "--no-helpers")
	c := r.check(t, "LA103")
	assert.Equal(t, "fail", c.Status, "%+v", c.Findings)
	assert.Contains(t, strings.Join(c.objects("fail"), " "), "traefik/lan-dns")
}

// LA303 for real: without the '.' block's forward, names outside the zone stop resolving.
func TestDoctorFailsLA303WhenTheDotBlockNoLongerForwards(t *testing.T) {
	lab.EditLanDNSCorefile(t, func(s string) string {
		out := strings.Replace(s, "    forward . /etc/resolv.conf\n", "", 1)
		require.NotEqual(t, s, out, "the lab's Corefile forwards the '.' block")
		return out
	})
	eventually(t, 30*time.Second, func() error {
		r := doctor(t, "--only", "LA303", "--no-helpers")
		if c := r.check(t, "LA303"); c.Status != "fail" {
			return errorf("LA303 is %s after the reload", c.Status)
		}
		return nil
	})
}
