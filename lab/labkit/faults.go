package labkit

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/faults"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/fwdauth"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
)

// CertKind names a certificate ServeWrongCertificate can put in place.
type CertKind = faults.CertKind

// Certificates the proxy can be made to serve.
const (
	CertWrongHost = faults.CertWrongHost
	CertExpired   = faults.CertExpired
	CertUnknownCA = faults.CertUnknownCA
)

// Grant is a set of RBAC rules, cluster-wide (Namespace "") or in one namespace.
type Grant = faults.Grant

// ManifestGrants are the grants of shipped RBAC manifests (see faults.ManifestGrants).
func ManifestGrants(names ...string) ([]Grant, error) { return faults.ManifestGrants(names...) }

func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), OpTimeout)
}

// must runs a fault operation and fails the test on error.
func must(tb testing.TB, what string, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

// cleanup registers an undo step that reports (not panics) when it fails.
func cleanup(tb testing.TB, what string, undo func(context.Context) error) {
	tb.Helper()
	tb.Cleanup(func() {
		ctx, cancel := opCtx()
		defer cancel()
		if err := undo(ctx); err != nil {
			tb.Errorf("restore after %s: %v", what, err)
		}
	})
}

// IPForward reads net.ipv4.ip_forward in a node's own namespace (the VPN pod's is
// VPNPodIPForward's).
func (l *Lab) IPForward(tb testing.TB, node string) bool {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	on, err := l.faults.IPForward(ctx, node)
	must(tb, "read ip_forward on "+node, err)
	return on
}

// SetIPForward writes net.ipv4.ip_forward in a shared node's namespace; the old value comes
// back at cleanup. The VPN pod's is SetVPNPodIPForward's.
func (l *Lab) SetIPForward(tb testing.TB, node string, on bool) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	prev, err := l.faults.SetIPForward(ctx, node, on)
	must(tb, "set ip_forward on "+node, err)
	cleanup(tb, "SetIPForward", func(ctx context.Context) error {
		_, err := l.faults.SetIPForward(ctx, node, prev)
		return err
	})
}

// StartListener starts a real process in the node's namespace bound on the node's address
// (port, "tcp" or "udp"); it is stopped at cleanup.
func (l *Lab) StartListener(tb testing.TB, node string, port int, proto string) {
	tb.Helper()
	l.StartListenerOn(tb, node, "", port, proto)
}

// StartListenerOn is StartListener on a given address ("0.0.0.0" for the wildcard).
func (l *Lab) StartListenerOn(tb testing.TB, node, addr string, port int, proto string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	name, err := l.faults.StartListener(ctx, node, addr, port, proto)
	must(tb, "start listener", err)
	cleanup(tb, "StartListener", func(ctx context.Context) error { return l.faults.StopProcess(ctx, name) })
}

// LinkDown unplugs a node (or "laptop", "internet") from the LAN until cleanup.
func (l *Lab) LinkDown(tb testing.TB, node string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "link down "+node, l.faults.SetLink(ctx, node, false))
	cleanup(tb, "LinkDown", func(ctx context.Context) error { return l.faults.SetLink(ctx, node, true) })
}

// AddLatency delays every packet the node sends on the LAN by d, until cleanup. It uses an
// NFQUEUE reader, not tc netem (the kernel here has no sch_netem); the effect is the same
// added one-way delay on the node's egress.
func (l *Lab) AddLatency(tb testing.TB, node string, d time.Duration) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "add latency on "+node, l.faults.SetLatency(ctx, node, d))
	cleanup(tb, "AddLatency", func(ctx context.Context) error { return l.faults.SetLatency(ctx, node, 0) })
}

// EditConfigMap rewrites one key of a ConfigMap through the API and waits until the pods that
// mount it have the new files (CoreDNS then reloads if its running Corefile has `reload`).
// The old value is restored at cleanup.
func (l *Lab) EditConfigMap(tb testing.TB, namespace, name, key string, edit func(string) string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	prev, err := l.faults.EditConfigMap(ctx, namespace, name, key, edit)
	must(tb, "edit configmap "+namespace+"/"+name, err)
	cleanup(tb, "EditConfigMap", func(ctx context.Context) error {
		return l.faults.SetConfigMapKey(ctx, namespace, name, key, prev)
	})
}

// EditLanDNSCorefile is EditConfigMap on the seed's traefik/lan-dns Corefile.
func (l *Lab) EditLanDNSCorefile(tb testing.TB, edit func(string) string) {
	tb.Helper()
	l.EditConfigMap(tb, "traefik", "lan-dns", "Corefile", edit)
}

// DropMasquerade removes the VPN pool's masquerade in the VPN pod until cleanup.
func (l *Lab) DropMasquerade(tb testing.TB) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	removed, err := l.faults.DropMasquerade(ctx)
	must(tb, "drop masquerade", err)
	cleanup(tb, "DropMasquerade", func(ctx context.Context) error { return l.faults.RestoreNATRules(ctx, removed) })
}

// ScopeMasquerade replaces the VPN pod's masquerade of the pool by one limited to outIface
// (`-s POOL -o OUTIFACE -j MASQUERADE`, as a chart that masquerades out of the tunnel writes
// it) until cleanup.
func (l *Lab) ScopeMasquerade(tb testing.TB, outIface string) {
	tb.Helper()
	l.DropMasquerade(tb)
	ctx, cancel := opCtx()
	defer cancel()
	rule := "-A POSTROUTING -s " + l.layout.VPNPool + " -o " + outIface + " -j MASQUERADE"
	must(tb, "scope masquerade", l.faults.RestoreNATRules(ctx, []string{rule}))
	cleanup(tb, "ScopeMasquerade", func(ctx context.Context) error {
		_, err := l.faults.DropMasquerade(ctx)
		return err
	})
}

// DropReturnRoute removes the pod network's routes back to the VPN pool until cleanup.
func (l *Lab) DropReturnRoute(tb testing.TB) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	hosts, err := l.faults.DropReturnRoutes(ctx)
	must(tb, "drop return routes", err)
	cleanup(tb, "DropReturnRoute", func(ctx context.Context) error { return l.faults.AddReturnRoutes(ctx, hosts) })
}

// ServeWrongCertificate makes the proxy serve a wrong certificate for the apps zone (through
// its TLS Secret, like a bad renewal) until cleanup.
func (l *Lab) ServeWrongCertificate(tb testing.TB, kind CertKind) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "serve certificate "+string(kind), l.faults.ServeCertificate(ctx, kind))
	cleanup(tb, "ServeWrongCertificate", func(ctx context.Context) error { return l.faults.ServeCertificate(ctx, faults.CertGood) })
}

// AnswerForwardAuth makes the lab's forward-auth server answer Traefik's requests for host with
// a (nil: the identity provider's redirect) until cleanup, which gives back the previous answer.
// What the browser then gets is the real Traefik's doing (e.g. a Location written as a path,
// resolved against the Middleware's forwardAuth address).
func (l *Lab) AnswerForwardAuth(tb testing.TB, host string, a *fwdauth.Answer) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	prev, err := l.faults.SetForwardAuthAnswer(ctx, host, a)
	must(tb, "answer the forward-auth of "+host, err)
	cleanup(tb, "AnswerForwardAuth", func(ctx context.Context) error {
		_, err := l.faults.SetForwardAuthAnswer(ctx, host, prev)
		return err
	})
}

// SwapRBAC returns a kubeconfig for a new ServiceAccount that has exactly the given grants;
// the account and its roles are deleted at cleanup. Run the plugin with --kubeconfig on it.
func (l *Lab) SwapRBAC(tb testing.TB, name string, grants ...Grant) string {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	path, err := l.faults.ServiceAccountKubeconfig(ctx, name, grants)
	if err != nil {
		_ = l.faults.DeleteServiceAccount(ctx, name)
	}
	must(tb, "service account "+name, err)
	cleanup(tb, "SwapRBAC", func(ctx context.Context) error { return l.faults.DeleteServiceAccount(ctx, name) })
	return path
}

// ReadOnlyRules is a convenience grant: get/list/watch on the given resources of the core,
// apps, discovery, networking and policy groups.
func ReadOnlyRules(resources ...string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{
		APIGroups: []string{"", "apps", "discovery.k8s.io", "networking.k8s.io", "policy"},
		Resources: resources, Verbs: []string{"get", "list", "watch"},
	}}
}

// SetDNSPolicy changes the dnsPolicy of a Deployment's pods and waits for the rollout, until
// cleanup. On lan-dns, ClusterFirst makes `forward .` reach the cluster DNS: cluster names
// leak to the LAN.
func (l *Lab) SetDNSPolicy(tb testing.TB, namespace, deployment string, policy corev1.DNSPolicy) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	prev, err := l.faults.SetDNSPolicy(ctx, namespace, deployment, policy)
	must(tb, "set dnsPolicy", err)
	cleanup(tb, "SetDNSPolicy", func(ctx context.Context) error {
		_, err := l.faults.SetDNSPolicy(ctx, namespace, deployment, prev)
		return err
	})
}

// RestartPods deletes the pods of selector and waits until deployment is available again:
// the replacements start from fresh namespaces (a hand fix is lost).
func (l *Lab) RestartPods(tb testing.TB, namespace, selector, deployment string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "restart pods "+selector, l.faults.DeletePods(ctx, namespace, selector, deployment))
}

// ApplyVariant applies lab/manifests/variants/<name>.yaml (server-side, like kubectl apply)
// and waits for the Deployment it changes; at cleanup the base manifest base/<base>.yaml is
// re-applied. Example: ApplyVariant(t, "openvpn-fixed-initcontainer", "60-openvpn", "vpn", "openvpn").
func (l *Lab) ApplyVariant(tb testing.TB, variant, base, namespace, deployment string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "apply "+variant, l.applyAndWait(ctx, filepath.Join(l.LabDir, "manifests", "variants", variant+".yaml"), namespace, deployment))
	cleanup(tb, "ApplyVariant", func(ctx context.Context) error {
		return l.applyAndWait(ctx, filepath.Join(l.LabDir, "manifests", "base", base+".yaml"), namespace, deployment)
	})
}

func (l *Lab) applyAndWait(ctx context.Context, path, namespace, deployment string) error {
	a, err := labctl.NewApplier(l.Config)
	if err != nil {
		return err
	}
	if err := a.ApplyFile(ctx, path); err != nil {
		return err
	}
	return l.faults.WaitRollout(ctx, namespace, deployment)
}

// WaitProxySynced waits until the lab's kube-proxy has programmed the Services and
// EndpointSlices as they are now (after a test changed one).
func (l *Lab) WaitProxySynced(tb testing.TB) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "wait for kube-proxy", l.faults.WaitProxySynced(ctx))
}

// LowerLinkMTU sets the MTU of a node's LAN link (its bridge-side veth) until cleanup: frames
// over it are dropped silently, a link MTU black hole for Don't-Fragment packets.
func (l *Lab) LowerLinkMTU(tb testing.TB, node string, mtu int) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	prev, err := l.faults.SetLinkMTU(ctx, node, mtu)
	must(tb, "set the MTU of "+node+"'s link", err)
	cleanup(tb, "LowerLinkMTU", func(ctx context.Context) error {
		_, err := l.faults.SetLinkMTU(ctx, node, prev)
		return err
	})
}

// MasqueradeWithNft masquerades the VPN pool with nft directly (no iptables trace) until
// cleanup.
func (l *Lab) MasqueradeWithNft(tb testing.TB) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "masquerade with nft", l.faults.MasqueradeWithNft(ctx))
	cleanup(tb, "MasqueradeWithNft", l.faults.DropNftMasquerade)
}
