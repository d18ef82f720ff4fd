//go:build lab

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/kubeproxy"
)

// These tests prove `kubectl lanaccess migrate --to hostport` against the real parts: the API
// server admits what it prints, and the order of its cut-over is what the real kube-proxy and
// the real CNI portmap plugin do with a node address's port that an externalIP and a hostPort
// both claim.

// The objects migrate prints for the lab (its Traefik and lan-dns, on node-1..3) are admitted
// by the real API server as printed: `kubectl apply --dry-run=server` runs admission and
// validation (DaemonSet spec, hostPorts, matchFields affinity, Service) without persisting.
func TestMigrateHostPortObjectsAreAdmittedByTheAPIServer(t *testing.T) {
	r := runPlugin(t, "migrate", "--to", "hostport", "-o", "yaml")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	for _, want := range []string{"name: traefik-hostport", "name: lan-dns-hostport", "hostPort: 443", "hostPort: 80", "hostPort: 53"} {
		assert.Contains(t, r.Stdout, want)
	}
	file := filepath.Join(t.TempDir(), "hostport.yaml")
	require.NoError(t, os.WriteFile(file, []byte(r.Stdout), 0o600))
	out := kubectl(t, "apply", "--dry-run=server", "-f", file)
	for _, want := range []string{
		"daemonset.apps/traefik-hostport created (server dry run)",
		"service/traefik-hostport created (server dry run)",
		"daemonset.apps/lan-dns-hostport created (server dry run)",
		"service/lan-dns-hostport created (server dry run)",
	} {
		assert.Contains(t, out, want)
	}

	// The text's step commands parse and name the same objects; the doctor step names the new
	// Services with flags doctor has.
	text := runPlugin(t, "migrate", "--to", "hostport")
	require.Equal(t, 0, text.Code, "stderr: %s", text.Stderr)
	assert.Contains(t, text.Stdout, "kubectl lanaccess doctor --proxy-service traefik/traefik-hostport --dns-service traefik/lan-dns-hostport --zone apps.example.com")
	assert.Contains(t, text.Stdout, "The Corefile does not change")

	// MetalLB is refused with the reason, exit 2.
	refused := runPlugin(t, "migrate", "--to", "metallb")
	assert.Equal(t, 2, refused.Code)
	assert.Contains(t, refused.Stderr, "nodes' own LAN addresses")
}

// applyMigration applies the new objects `migrate --to hostport -o yaml` prints for the lab,
// until cleanup, and waits until a new pod of each DaemonSet is Ready on node-1..3.
func applyMigration(t *testing.T) []corev1.Pod {
	t.Helper()
	// The new pods map hostPort 53 on node-1..3: the cluster DNS leaves the nodes' namespaces
	// first, as in the hostPort lab variant (labkit.ClusterDNSInOwnNamespace says why).
	lab.ClusterDNSInOwnNamespace(t)
	r := runPlugin(t, "migrate", "--to", "hostport", "-o", "yaml")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	file := filepath.Join(t.TempDir(), "hostport.yaml")
	require.NoError(t, os.WriteFile(file, []byte(r.Stdout), 0o600))
	kubectl(t, "apply", "-f", file)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := lab.Kubectl(ctx, "delete", "-f", file, "--wait=true", "--timeout=90s")
		assert.NoError(t, err, "%s", out)
	})
	var pods []corev1.Pod
	eventually(t, 2*time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		list, err := lab.Client.CoreV1().Pods("traefik").List(ctx, metav1.ListOptions{LabelSelector: "lanaccess.io/form=hostport"})
		if err != nil {
			return err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					pods = append(pods, p)
				}
			}
		}
		if len(pods) != 6 {
			return fmt.Errorf("%d of 6 new pods Ready", len(pods))
		}
		return nil
	})
	return pods
}

// The new pods the migration creates serve what the old ones did, each on its node: the
// lan-dns DaemonSet's CoreDNS answers the zone from the same Corefile, and the Traefik
// DaemonSet's pods serve the probe host with the identity provider's redirect. Asked on the
// pods' own addresses from their nodes (the lab's node-1..3 run pods in the node's namespace
// without the CNI chain, so a hostPort is not forwarded there: that is the hostPort lab
// variant's, issue 26 item 1).
func TestMigrateHostPortPodsServeTheZoneAndTheRoutes(t *testing.T) {
	pods := applyMigration(t)
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
		switch {
		case strings.HasPrefix(p.Name, "lan-dns-hostport-"):
			out := lab.MustExec(t, p.Spec.NodeName, "dig", "+short", "+time=2", "+tries=1", "-p", "1053", "@"+p.Status.PodIP, probeHost)
			assert.ElementsMatch(t, proxyAddresses, strings.Fields(out), "lan-dns pod %s on %s", p.Name, p.Spec.NodeName)
		case strings.HasPrefix(p.Name, "traefik-hostport-"):
			// A new Traefik listens before its providers have read the routes (a 404 from
			// no router): asked again for at most 30 s.
			eventually(t, 30*time.Second, func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				out, err := lab.Exec(ctx, p.Spec.NodeName, "curl", "-s", "-o", "/dev/null", "-m", "5", "-w", "%{http_code} %{redirect_url}",
					"--cacert", lab.CAFile, "--resolve", probeHost+":8443:"+p.Status.PodIP, "https://"+probeHost+":8443/")
				if err != nil || !strings.HasPrefix(out, "302 https://auth.example.com/") {
					return fmt.Errorf("traefik pod %s on %s: %q %v", p.Name, p.Spec.NodeName, out, err)
				}
				return nil
			})
		default:
			t.Errorf("unexpected pod %s", p.Name)
		}
	}
	assert.Equal(t, map[string]bool{"node-1": true, "node-2": true, "node-3": true}, nodes, "one node per address, no other")
}

// The whole cut-over as printed, on the lab: the new objects beside the old ones, the old
// Services' externalIPs removed with the printed commands, then the node addresses answer
// through the new pods (portmap's hostPorts) and doctor, named the new Services as the printed
// step says, passes. The new pods map hostPorts, so the lab gives them namespaces of their own
// through the node's real CNI chain (its portmap plugin).
func TestMigrateHostPortCutOverPassesDoctor(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	applyMigration(t)
	text := runPlugin(t, "migrate", "--to", "hostport")
	require.Equal(t, 0, text.Code, "stderr: %s", text.Stderr)
	// Restored at cleanup, whatever the cut-over did.
	lab.SetExternalIPs(t, "traefik", "traefik", proxyAddresses...)
	lab.SetExternalIPs(t, "traefik", "lan-dns", proxyAddresses...)
	var cut []string
	for line := range strings.SplitSeq(text.Stdout, "\n") {
		if strings.Contains(line, "patch service") && strings.Contains(line, `"op":"remove"`) {
			cut = append(cut, line)
		}
	}
	require.Len(t, cut, 2, "the cut-over patches both old Services")
	for _, line := range cut {
		pasteKubectl(t, line)
	}
	lab.WaitProxySynced(t)
	for _, ip := range proxyAddresses {
		eventually(t, 30*time.Second, func() error {
			r, err := query(ip, probeHost, dns.TypeA, "udp")
			if err != nil {
				return err
			}
			if got := aRecords(r); !assert.ObjectsAreEqual(len(proxyAddresses), len(got)) {
				return fmt.Errorf("%s answers %v", ip, got)
			}
			resp, err := httpsVia(probeHost, ip, 3*time.Second)
			if err != nil {
				return err
			}
			if resp.StatusCode != 302 {
				return fmt.Errorf("%s: HTTPS %d", ip, resp.StatusCode)
			}
			return nil
		})
	}
	// doctor as the plan prints it (step 5): the new Services, the zone and the probe host the
	// live setup's routes give, since doctor naming both Services stays in their namespace.
	var printed []string
	for line := range strings.SplitSeq(text.Stdout, "\n") {
		if strings.HasPrefix(line, "kubectl lanaccess doctor ") {
			printed = strings.Fields(line)[3:]
		}
	}
	require.Equal(t, []string{"--proxy-service", "traefik/traefik-hostport", "--dns-service", "traefik/lan-dns-hostport",
		"--zone", "apps.example.com", "--host", probeHost}, printed)
	r := doctor(t, printed...)
	assert.Equal(t, 0, r.Code, "doctor on the new form: %s\n%s", r.Stdout, r.Stderr)
}

// While an externalIP and a hostPort claim the same node address and port, which one gets
// the LAN's packets decides the cut-over's order. node-vpn runs the real CNI chain (the
// portmap plugin of containernetworking/plugins v1.10.0, from the node's conflist) and the
// real kube-proxy: a pod there publishes hostPort 18080, a Service with externalIP 10.0.10.14
// (node-vpn's address) on 18080 sends to the web pod. The workstation asks node-vpn:18080.
// kube-proxy prepends its KUBE-SERVICES jump to nat PREROUTING and portmap appends its
// CNI-HOSTPORT-DNAT jump, so in iptables mode the externalIP answers until it is removed;
// then portmap's rule answers. migrate's text says so (pkg/migrate whoWins).
func TestAnExternalIPWinsOverAHostPortUntilItIsRemoved(t *testing.T) {
	for _, mode := range []kubeproxy.Mode{kubeproxy.IPTables, kubeproxy.NFTables} {
		t.Run(string(mode), func(t *testing.T) {
			if mode != kubeproxy.IPTables {
				lab.KubeProxyMode(t, mode)
			}
			vpn := lab.VPNNode()
			hostPortEcho(t, "hostport-echo", "answered by the hostPort pod")
			svc := externalIPEcho(t, "extip-echo", vpn.IP)
			lab.WaitProxySynced(t)

			url := fmt.Sprintf("http://%s:18080/", vpn.IP)
			got := eventuallyBody(t, url, "hello from the web pod", "answered by the hostPort pod")
			t.Logf("kube-proxy %s, externalIP and hostPort both on %s:18080: %q", mode, vpn.IP, got)
			assert.Equal(t, "hello from the web pod", got, "the externalIP's Service answers while both claim the port")

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			svc.Spec.ExternalIPs = nil
			_, err := lab.Client.CoreV1().Services(svc.Namespace).Update(ctx, svc, metav1.UpdateOptions{})
			require.NoError(t, err)
			lab.WaitProxySynced(t)
			got = eventuallyBody(t, url, "answered by the hostPort pod", "")
			assert.Equal(t, "answered by the hostPort pod", got, "portmap answers once the externalIP is gone")
		})
	}
}

// eventuallyBody fetches url from the workstation until it answers one of the texts (at most
// 30 s, a request a second) and returns the last answer.
func eventuallyBody(t *testing.T, url string, texts ...string) string {
	t.Helper()
	var got string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, err := httpFrom("", url, 2*time.Second)
		got = strings.TrimSpace(out)
		if err == nil {
			for _, want := range texts {
				if want != "" && got == want {
					return got
				}
			}
		}
		time.Sleep(time.Second)
	}
	return got
}

// hostPortEcho runs an http-echo pod on node-vpn publishing hostPort 18080, until cleanup.
func hostPortEcho(t *testing.T, name, text string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "web", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"lab.lanaccess.io/role": "vpn"},
			Tolerations:  []corev1.Toleration{{Key: "lab.lanaccess.io/dedicated", Operator: corev1.TolerationOpEqual, Value: "vpn", Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{
				Name: "echo", Image: "docker.io/hashicorp/http-echo:1.0",
				Args:  []string{"-listen=:5678", "-text=" + text},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 5678, HostPort: 18080, Protocol: corev1.ProtocolTCP}},
			}},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := lab.Client.CoreV1().Pods("web").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := lab.Client.CoreV1().Pods("web").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		if !apierrors.IsNotFound(err) {
			assert.NoError(t, err)
		}
		eventually(t, 30*time.Second, func() error {
			_, err := lab.Client.CoreV1().Pods("web").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("pod web/%s still there", name)
		})
	})
	eventually(t, 60*time.Second, func() error {
		p, err := lab.Client.CoreV1().Pods("web").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("pod web/%s not ready", name)
	})
}

// externalIPEcho is a Service of the web pod with externalIP addr on port 18080, until cleanup.
func externalIPEcho(t *testing.T, name, addr string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "web"},
		Spec: corev1.ServiceSpec{
			Selector:    map[string]string{"app": "web"},
			ExternalIPs: []string{addr},
			Ports:       []corev1.ServicePort{{Name: "http", Port: 18080, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := lab.Client.CoreV1().Services("web").Create(ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, lab.Client.CoreV1().Services("web").Delete(ctx, name, metav1.DeleteOptions{}))
		lab.WaitProxySynced(t)
	})
	return got
}
