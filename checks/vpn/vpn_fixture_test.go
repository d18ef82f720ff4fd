package vpn

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/internal/kubetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// The recordings in testdata/vpn are real output of the trace's own commands, run with
// `ip netns exec` in network namespaces built like the seed's failure: "vr-srv" runs OpenVPN
// 2.6.14 in static-key point-to-point mode (tun0 10.8.0.1 peer 10.8.0.2, the client in another
// namespace) with eth0 10.244.1.5/24; a "DNS pod" namespace answers on 10.244.1.7 and on the VIP
// 10.96.0.10; 10.96.0.99 and 10.244.1.99 are silent. "-0"/"-1" and nat-empty/nat-masq are before
// and after `sysctl -w net.ipv4.ip_forward=1` and the pool's MASQUERADE; names-fail-* ran with a
// resolv.conf pointing at the silent 10.96.0.99; nat-denied ran as nobody. tunnel-server is a
// namespace with tun0 10.8.0.1/24 and a process started as
// "openvpn --config /etc/openvpn/openvpn.conf". The namespaces did not have a PID namespace of
// their own, so the tunnel recordings also list the other namespaces' openvpn processes, as a
// container sharing the host's PID namespace would.
type vpnRecording struct {
	Cmd    []string `json:"cmd"`
	Stdout string   `json:"stdout"`
	Stderr string   `json:"stderr"`
	Exit   int      `json:"exit"`
}

func vpnReply(t *testing.T, name string) kubetest.Reply {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "vpn", name+".json"))
	require.NoError(t, err)
	var r vpnRecording
	require.NoError(t, json.Unmarshal(b, &r))
	reply := kubetest.Reply{Stdout: r.Stdout, Stderr: r.Stderr}
	if r.Exit != 0 {
		reply.Err = &podexec.ExitError{Code: r.Exit, Stderr: r.Stderr, Command: r.Cmd}
	}
	return reply
}

const vpnPodRef = "vpn/openvpn-7d9f8-x2x4k"

type vpnScenario struct {
	forwarding string // "0" or "1"
	// node is the node-side recording (default node-calico-off: the node has 1, Calico's CNI
	// plugin writes 0); "none" puts no hostNetwork pod on the node.
	node      string
	nat       string // recording name
	tunnel    string // recording name
	vipSilent bool
	namesFail bool
	// tools overrides the recorded tool list (an image with fewer tools).
	tools []string
	// policyGroup is another API group whose policy kinds the API serves ("cilium.io").
	policyGroup string
}

type vpnFixture struct {
	env     *Env
	client  *fake.Clientset
	dynamic *dynamicfake.FakeDynamicClient
	exec    *kubetest.FakeExecutor
	pod     *corev1.Pod
}

func vpnObjects() (*corev1.Pod, []runtime.Object) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "vpn", Name: "openvpn-7d9f8-x2x4k",
			Labels:          map[string]string{"app": "openvpn", "pod-template-hash": "7d9f8"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "openvpn-7d9f8", Controller: new(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-1", DNSPolicy: corev1.DNSClusterFirst, Containers: []corev1.Container{{
			Name: "openvpn", Image: "kylemanna/openvpn:2.4",
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.5", ContainerStatuses: []corev1.ContainerStatus{
			{Name: "openvpn", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "vpn", Name: "openvpn-7d9f8",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "openvpn", Controller: new(true)}}}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "vpn", Name: "openvpn"}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vpn", Labels: map[string]string{corev1.LabelMetadataName: "vpn"}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64"}}}
	serviceCIDR := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/12"}}}
	dns := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns", Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10"}}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: "kube-dns"}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.7"}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "kube-system", Name: "coredns-5d78c-q8lzt"}}},
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "nginx-0"},
		Spec:   corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.9"}}
	return pod, []runtime.Object{rs, dep, ns, node, serviceCIDR, dns, slice, other}
}

// dynamicListKinds are the custom resources vpn-trace lists.
var dynamicListKinds = map[schema.GroupVersionResource]string{
	facts.InstallationGVR: "InstallationList",
	{Group: "crd.projectcalico.org", Version: "v1", Resource: "networkpolicies"}:       "NetworkPolicyList",
	{Group: "crd.projectcalico.org", Version: "v1", Resource: "globalnetworkpolicies"}: "GlobalNetworkPolicyList",
	{Group: "projectcalico.org", Version: "v3", Resource: "networkpolicies"}:           "NetworkPolicyList",
	{Group: "projectcalico.org", Version: "v3", Resource: "globalnetworkpolicies"}:     "GlobalNetworkPolicyList",
	{Group: "cilium.io", Version: "v2", Resource: "ciliumnetworkpolicies"}:             "CiliumNetworkPolicyList",
	{Group: "cilium.io", Version: "v2", Resource: "ciliumclusterwidenetworkpolicies"}:  "CiliumClusterwideNetworkPolicyList",
}

// calicoNodeConfDir is where the fixture's calico-node container mounts the node's
// /etc/cni/net.d: the directory the node-* recordings read (see facts/record_test.go).
const calicoNodeConfDir = "/tmp/vpnrec/host/etc/cni/net.d"

// onNode2 puts the ladder's DNS pod (kube-system/coredns-5d78c-q8lzt, 10.244.1.7) on node-2,
// with a calico-node pod there whose read is the recording nodeRead.
func onNode2(t *testing.T, nodeRead string) (extra []runtime.Object, register func(*vpnFixture)) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64"}}}
	dns := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns-5d78c-q8lzt", Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec: corev1.PodSpec{NodeName: "node-2", Containers: []corev1.Container{{Name: "coredns", Image: "registry.k8s.io/coredns/coredns:v1.12.0",
			Ports: []corev1.ContainerPort{{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.7"}}
	objs := cniObjects("calico")
	reader := objs[1].(*corev1.Pod).DeepCopy()
	reader.Name, reader.Spec.NodeName = "calico-node-9q8rt", "node-2"
	return []runtime.Object{node, dns, reader}, func(f *vpnFixture) {
		f.exec.On("kube-system/calico-node-9q8rt", "@@forward", vpnReply(t, nodeRead))
	}
}

// cniObjects are the CNI's DaemonSet (hostNetwork, the node's /etc/cni/net.d mounted, here
// at calicoNodeConfDir, as calico.yaml and kube-flannel.yml mount it at /host/etc/cni/net.d
// and /etc/cni/net.d) and its pod on node-1, named cniPod.
func cniObjects(cni string) []runtime.Object {
	name, image := "calico-node", "docker.io/calico/node:v3.31.0"
	if cni == "flannel" {
		name, image = "kube-flannel-ds", "ghcr.io/flannel-io/flannel:v0.27.0"
	}
	vol := corev1.Volume{Name: "cni-net-dir", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/cni/net.d"}}}
	container := corev1.Container{Name: name, Image: image,
		VolumeMounts: []corev1.VolumeMount{{Name: "cni-net-dir", MountPath: calicoNodeConfDir}}}
	spec := corev1.PodSpec{HostNetwork: true, Volumes: []corev1.Volume{vol}, Containers: []corev1.Container{container}}
	uid := types.UID("uid-" + name)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, UID: uid},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}
	podSpec := spec.DeepCopy()
	podSpec.NodeName = "node-1"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name + "-7xk2p",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: name, UID: uid, Controller: new(true)}}},
		Spec: *podSpec,
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	return []runtime.Object{ds, pod}
}

// podFromTemplate is the next replica of the fake Deployment vpn/openvpn: its pod template's
// spec on the fixture's pod, as the ReplicaSet controller would create it after a rollout.
func podFromTemplate(t *testing.T, cs *fake.Clientset) func(*corev1.Pod, *Options) {
	t.Helper()
	dep, err := cs.AppsV1().Deployments("vpn").Get(t.Context(), "openvpn", metav1.GetOptions{})
	require.NoError(t, err)
	tmpl := dep.Spec.Template.Spec
	return func(p *corev1.Pod, _ *Options) {
		p.Spec.InitContainers = tmpl.InitContainers
		p.Spec.SecurityContext = tmpl.SecurityContext
	}
}

// newVPNFixture builds the cluster and the pod's recorded answers; mutate lets a test change
// the pod or the options before the trace starts.
func newVPNFixture(t *testing.T, sc vpnScenario, mutate func(pod *corev1.Pod, opts *Options), extra ...runtime.Object) *vpnFixture {
	t.Helper()
	pod, objs := vpnObjects()
	var opts Options
	if mutate != nil {
		mutate(pod, &opts)
	}
	node := sc.node
	if node == "" {
		node = "node-calico-off"
	}
	cni := "calico"
	if strings.Contains(node, "flannel") {
		cni = "flannel"
	}
	if node != "none" {
		objs = append(objs, cniObjects(cni)...)
	}
	var typed, dyn []runtime.Object
	for _, o := range append(append(objs, pod), extra...) {
		if _, ok := o.(*unstructured.Unstructured); ok {
			dyn = append(dyn, o)
		} else {
			typed = append(typed, o)
		}
	}
	cs := fake.NewClientset(typed...)
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), dynamicListKinds, dyn...)
	// The API has the policy kinds of the cluster's CNI only; the others are not served.
	served := "crd.projectcalico.org"
	if cni == "flannel" {
		served = "none"
	}
	dc.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gvr := a.GetResource()
		if gvr == facts.InstallationGVR || gvr.Group == served || gvr.Group == sc.policyGroup {
			return false, nil, nil
		}
		return true, nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	})
	ex := &kubetest.FakeExecutor{}
	if node != "none" {
		name := "calico-node"
		if cni == "flannel" {
			name = "kube-flannel-ds"
		}
		ex.On("kube-system/"+name+"-7xk2p", "@@forward", vpnReply(t, node))
	}
	if sc.tools != nil {
		ex.On(vpnPodRef, "for t in cat sysctl", kubetest.Reply{Stdout: strings.Join(sc.tools, "\n") + "\n@@end\n"})
	} else {
		ex.On(vpnPodRef, "for t in cat sysctl", vpnReply(t, "tools"))
	}
	if sc.forwarding != "" {
		ex.On(vpnPodRef, "cat /proc/sys/net/ipv4/ip_forward", vpnReply(t, "ip-forward-cat-"+sc.forwarding))
	}
	tunnel := sc.tunnel
	if tunnel == "" {
		tunnel = "tunnel-p2p"
	}
	ex.On(vpnPodRef, "@@ip-addr", vpnReply(t, tunnel))
	if sc.nat != "" {
		ex.On(vpnPodRef, "@@tool", vpnReply(t, sc.nat))
	}
	ex.On(vpnPodRef, "ping -c 1 -W 2 10.8.0.2", vpnReply(t, "ping-peer-answers")).
		On(vpnPodRef, "@10.244.1.7 kubernetes.default.svc.cluster.local", vpnReply(t, "dns-pod-answers-dig")).
		On(vpnPodRef, "@10.96.0.10 kubernetes.default.svc.cluster.local", vpnReply(t, "dns-vip-answers-dig")).
		On(vpnPodRef, "@10.96.0.99 kubernetes.default.svc.cluster.local", vpnReply(t, "dns-vip-silent-dig"))
	if sc.vipSilent {
		opts.ClusterDNS = netip.MustParseAddr("10.96.0.99")
	}
	if sc.namesFail {
		ex.On(vpnPodRef, "getent hosts kubernetes.default.svc.cluster.local.", vpnReply(t, "names-fail-getent"))
	} else {
		ex.On(vpnPodRef, "getent hosts kubernetes.default.svc.cluster.local.", vpnReply(t, "names-resolve-getent"))
	}
	env := &Env{Client: clientgo.Wrap(cs), Dynamic: dc, Exec: ex, Options: opts}
	f := &vpnFixture{env: env, client: cs, dynamic: dc, exec: ex, pod: pod}
	// A fake clientset has no node proxy: the kubelet configuration reads as forbidden, as it
	// is for most users; tests that need it replace Configz.
	env.Configz = func(context.Context, string) ([]byte, error) {
		return nil, errorString(`nodes "node-1" is forbidden: User "viewer" cannot get resource "nodes/proxy"`)
	}
	env.Prober = &fakeProber{}
	return f
}

type errorString string

func (e errorString) Error() string { return string(e) }

// facts gathers needs and returns the traced replica's facts.
func (f *vpnFixture) facts(t *testing.T, needs facts.Need) *facts.Pod {
	t.Helper()
	run, err := f.env.gather(t.Context(), needs)
	require.NoError(t, err)
	require.NotEmpty(t, run.Pods)
	return run.Pods[0]
}

func (f *vpnFixture) run(t *testing.T, c engine.Check) (engine.Status, string, []engine.Finding) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := c.Run(ctx)
	st, reason := engine.StatusOf(o)
	assert.Empty(t, catalogue.Undeclared(c.ID, o.Findings), "%s emits findings without a declared code", c.ID)
	return st, reason, o.Findings
}

// fakeProber answers the client-side ladder from a table: address -> answer.
type fakeProber struct {
	local    []netip.Addr
	connect  map[netip.AddrPort]error
	query    map[netip.AddrPort]string // rcode; absent = silent
	resolved map[string][]netip.Addr
	// table is /proc/net/route ("" = not readable); sources the kernel's source address per
	// destination (absent: the first local address, the tunnel's in these tests).
	table   string
	sources map[netip.Addr]netip.Addr
	// df answers the Don't-Fragment probes by size (absent: passed); mtu is the tunnel
	// interface's (0: 1500).
	df  map[int]facts.SizeResult
	mtu int
	// sourceErr fails SourceFor for some destinations (a kernel without a route to them).
	sourceErr map[netip.Addr]error
}

func (p *fakeProber) InterfaceMTU(netip.Addr) (int, error) {
	if p.mtu == 0 {
		return 1500, nil
	}
	return p.mtu, nil
}

func (p *fakeProber) SendDF(_ context.Context, _ netip.AddrPort, size int) (facts.SizeResult, error) {
	if r, ok := p.df[size]; ok {
		return r, nil
	}
	return facts.SizeResult{Size: size, State: facts.SizePassed, Detail: "NOERROR"}, nil
}

// everyHopAnswers is a connected client (its tunnel address local) whose every hop answers: the
// server refuses 1194/tcp, the DNS pod and VIP answer, the resolver resolves.
func everyHopAnswers(local string) *fakeProber {
	return &fakeProber{local: []netip.Addr{netip.MustParseAddr(local)},
		connect:  map[netip.AddrPort]error{netip.MustParseAddrPort("10.8.0.1:1194"): syscall.ECONNREFUSED},
		query:    map[netip.AddrPort]string{netip.MustParseAddrPort("10.244.1.7:53"): "NOERROR", netip.MustParseAddrPort("10.96.0.10:53"): "NOERROR"},
		resolved: map[string][]netip.Addr{"kubernetes.default.svc.cluster.local": {netip.MustParseAddr("10.96.0.1")}},
	}
}

func (p *fakeProber) RoutingTable() (string, error) {
	if p.table == "" {
		return "", errorString("the routing table is read on Linux only (this is darwin)")
	}
	return p.table, nil
}

func (p *fakeProber) SourceFor(dest netip.Addr) (netip.Addr, error) {
	if err, ok := p.sourceErr[dest]; ok {
		return netip.Addr{}, err
	}
	if s, ok := p.sources[dest]; ok {
		return s, nil
	}
	if len(p.local) == 0 {
		return netip.Addr{}, errorString("connect: network is unreachable")
	}
	return p.local[0], nil
}

func (p *fakeProber) LocalAddrs() ([]netip.Addr, error) { return p.local, nil }

func (p *fakeProber) Connect(ctx context.Context, to netip.AddrPort) error {
	if err, ok := p.connect[to]; ok {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

func (p *fakeProber) QueryA(ctx context.Context, server netip.AddrPort, _ string) (string, error) {
	if rc, ok := p.query[server]; ok {
		return rc, nil
	}
	<-ctx.Done()
	return "", ctx.Err()
}

func (p *fakeProber) Resolve(_ context.Context, name string) ([]netip.Addr, error) {
	if a, ok := p.resolved[name]; ok {
		return a, nil
	}
	return nil, errorString("lookup " + name + ": no such host")
}

// clientRouting is this machine's routing as recorded in a VPN client's namespace
// (facts/record_test.go): its /proc/net/route and, per address, the source `ip route get`
// shows, which is what the kernel picks for the prober's UDP socket too.
func clientRouting(t *testing.T, name string) (string, map[netip.Addr]netip.Addr) {
	t.Helper()
	sources := map[netip.Addr]netip.Addr{}
	for _, dest := range []string{"10.8.0.1", "10.244.1.7", "10.96.0.10"} {
		f := strings.Fields(vpnReply(t, name+"-get-"+dest).Stdout)
		for i := range f {
			if f[i] == "src" && i+1 < len(f) {
				sources[netip.MustParseAddr(dest)] = netip.MustParseAddr(f[i+1])
			}
		}
		require.Contains(t, sources, netip.MustParseAddr(dest), "no src in %s", name)
	}
	return vpnReply(t, name).Stdout, sources
}

// serverConfigReply is a server configuration file from testdata/vpn.
func serverConfigReply(t *testing.T, name string) kubetest.Reply {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "vpn", name))
	require.NoError(t, err)
	return kubetest.Reply{Stdout: string(b)}
}

// byCode is the one finding with code.
func byCode(t *testing.T, fs []engine.Finding, code string) engine.Finding {
	t.Helper()
	var found []engine.Finding
	for _, f := range fs {
		if f.Code == code {
			found = append(found, f)
		}
	}
	require.Len(t, found, 1, "findings with code %s in:\n%s", code, messages(fs))
	return found[0]
}

func messages(fs []engine.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(string(f.Severity) + " " + f.Object + ": " + f.Message + "\n")
	}
	return b.String()
}

// applyFix applies a remediation to the fake cluster the way a user pastes it, so a test can
// show the judgement flip: `kubectl -n NS patch KIND NAME --type=json|merge -p 'PATCH'`, or a
// "# FILE: kubectl -n NS patch KIND NAME --patch-file FILE" line followed by the YAML of FILE
// (a strategic merge patch).
func applyFix(t *testing.T, f *vpnFixture, remediation string) {
	t.Helper()
	cs := f.client
	var cmd []string
	var body []string
	for line := range strings.SplitSeq(remediation, "\n") {
		switch {
		case cmd != nil:
			body = append(body, line)
		case strings.HasPrefix(line, "kubectl "):
			cmd = shellWords(t, line)
		case strings.HasPrefix(line, "# ") && strings.Contains(line, ": kubectl "):
			_, c, _ := strings.Cut(line, ": ")
			cmd = shellWords(t, c)
		}
	}
	require.NotNil(t, cmd, "no kubectl command in %q", remediation)
	ns, kind, name, ptype, patch := "", "", "", types.StrategicMergePatchType, []byte(nil)
	for i := 1; i < len(cmd); i++ {
		switch a := cmd[i]; a {
		case "-n":
			ns, i = cmd[i+1], i+1
		case "-p":
			patch, i = []byte(cmd[i+1]), i+1
		case "--type=json":
			ptype = types.JSONPatchType
		case "--type=merge":
			ptype = types.MergePatchType
		case "--patch-file":
			j, err := yaml.YAMLToJSON([]byte(strings.Join(body, "\n")))
			require.NoError(t, err)
			patch, i = j, i+1
		case "patch":
			kind, name, i = cmd[i+1], cmd[i+2], i+2
		}
	}
	require.NotEmpty(t, patch, "no patch in %q", remediation)
	var err error
	switch kind {
	case "deployment":
		_, err = cs.AppsV1().Deployments(ns).Patch(t.Context(), name, ptype, patch, metav1.PatchOptions{})
	case "networkpolicy":
		_, err = cs.NetworkingV1().NetworkPolicies(ns).Patch(t.Context(), name, ptype, patch, metav1.PatchOptions{})
	case "configmap":
		_, err = cs.CoreV1().ConfigMaps(ns).Patch(t.Context(), name, ptype, patch, metav1.PatchOptions{})
	case "installation.operator.tigera.io":
		_, err = f.dynamic.Resource(facts.InstallationGVR).Patch(t.Context(), name, ptype, patch, metav1.PatchOptions{})
	default:
		t.Fatalf("applyFix: no fake for kind %q", kind)
	}
	require.NoError(t, err, "applying %q", remediation)
}

// shellWords splits a command line as a POSIX shell does (quotes removed), with a shell
// parser: the remediation's quoting is what is being tested.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	require.NoError(t, err)
	require.Len(t, f.Stmts, 1, line)
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	require.True(t, ok, line)
	words := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		s, err := expand.Literal(nil, w)
		require.NoError(t, err)
		words = append(words, s)
	}
	return words
}

func intOrString[T int | string](v T) intstr.IntOrString {
	switch x := any(v).(type) {
	case int:
		return intstr.FromInt32(int32(x))
	default:
		return intstr.FromString(x.(string))
	}
}

// sweepRecordings serves the recorded Don't-Fragment sweep name (facts/record_test.go): the
// script that read the tunnel interface's MTU and pinged the peer 10.8.0.2 at every size, and
// the black hole's refining script, each answering the command it was recorded for.
func sweepRecordings(t *testing.T, f *vpnFixture, name string) {
	t.Helper()
	for _, part := range []string{"sweep", "refine"} {
		b, err := os.ReadFile(filepath.Join("testdata", "vpn", name+"-"+part+".json"))
		if os.IsNotExist(err) && part == "refine" {
			continue // no black hole, no refinement
		}
		require.NoError(t, err)
		var r vpnRecording
		require.NoError(t, json.Unmarshal(b, &r))
		f.exec.On(vpnPodRef, strings.Join(r.Cmd, " "), vpnReply(t, name+"-"+part))
	}
}

// clientSweep is the recorded client-side sweep name: the tunnel interface's MTU and each
// size's outcome, as the prober saw them inside the client's namespace.
func clientSweep(t *testing.T, name string) (int, map[int]facts.SizeResult) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "vpn", name+"-client.json"))
	require.NoError(t, err)
	var rec struct {
		InterfaceMTU int                         `json:"interfaceMTU"`
		Sizes        map[string]facts.SizeResult `json:"sizes"`
	}
	require.NoError(t, json.Unmarshal(b, &rec))
	out := map[int]facts.SizeResult{}
	for k, v := range rec.Sizes {
		size, err := strconv.Atoi(k)
		require.NoError(t, err)
		out[size] = v
	}
	return rec.InterfaceMTU, out
}
