package nodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/internal/kubetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// The recordings in testdata/la201 are real: a network namespace with 10.0.10.12 on an
// interface, python listeners bound as described, and the node commands (procnet's
// TablesCommand and OwnersCommand) run in it.
//
//	tables-clean.txt: 127.0.0.53:53 tcp+udp (as systemd-resolved), 0.0.0.0:22/tcp
//	tables-conflict.txt: 0.0.0.0:80/tcp, 10.0.10.12:53/udp, [::]:443/tcp, and the stub again
//	owners-conflict.txt: the owners scan for the conflict's inodes (pid 15500, python3.11)
func la201Recording(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "la201", name))
	require.NoError(t, err)
	return string(b)
}

func la201Node(name, ip string) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:   corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"},
		},
	}
}

// la201KubeProxy is the DaemonSet the reader pods belong to: kube-proxy is a trusted reader.
var la201KubeProxy = &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy", UID: "kube-proxy-uid"}}

func la201ReaderPod(node string, hostPID bool) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy-" + node, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "kube-proxy", UID: "kube-proxy-uid", Controller: new(true)}}},
		Spec: corev1.PodSpec{NodeName: node, HostNetwork: true, HostPID: hostPID, Containers: []corev1.Container{{Name: "kube-proxy"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "kube-proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
}

type la201Fixture struct {
	env    *Env
	client *fake.Clientset
	exec   *kubetest.FakeExecutor
}

// newLA201Fixture: node-1 (10.0.10.11) and node-2 (10.0.10.12) carry the addresses of both
// Services, node-3 (10.0.10.13) carries none; each node runs a hostNetwork kube-proxy.
func newLA201Fixture(t *testing.T, objs ...runtime.Object) *la201Fixture {
	t.Helper()
	nodes := []corev1.Node{la201Node("node-1", "10.0.10.11"), la201Node("node-2", "10.0.10.12"), la201Node("node-3", "10.0.10.13")}
	proxy := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik"}, Spec: corev1.ServiceSpec{
		ExternalIPs: []string{"10.0.10.11", "10.0.10.12"},
		Ports:       []corev1.ServicePort{{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP}, {Name: "websecure", Port: 443, Protocol: corev1.ProtocolTCP}},
	}}
	dns := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "lan-dns", Name: "lan-dns"}, Spec: corev1.ServiceSpec{
		ExternalIPs: []string{"10.0.10.11", "10.0.10.12"},
		Ports:       []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP}},
	}}
	objs = append(objs, la201KubeProxy, la201ReaderPod("node-1", true), la201ReaderPod("node-2", true), la201ReaderPod("node-3", true))
	cs := kubetest.ClientsetWithHelperPolicy(objs...)
	ex := &kubetest.FakeExecutor{}
	env := &Env{
		Setup:  &kube.Setup{ProxyService: proxy, DNSService: dns, Nodes: nodes},
		Pods:   ClientPods{Client: clientgo.Wrap(cs)},
		Shells: podexec.NewNodeShells(clientgo.Wrap(cs), ex, podexec.HelperConfig{Namespace: "lanaccess", RunID: "t1", StartTimeout: 2 * time.Second, PollInterval: 10 * time.Millisecond}),
	}
	return &la201Fixture{env: env, client: cs, exec: ex}
}

// node answers for one node's reader pod.
func (f *la201Fixture) node(node, tables, owners string) *la201Fixture {
	pod := "kube-system/kube-proxy-" + node
	f.exec.On(pod, "cat /proc/net/tcp", kubetest.Reply{Stdout: "  sl  local_address\n"}).
		On(pod, "@@lanaccess-table", kubetest.Reply{Stdout: tables}).
		On(pod, "ls -l /proc/[0-9]*/fd", kubetest.Reply{Stdout: owners})
	return f
}

func (f *la201Fixture) run(t *testing.T) (engine.Status, string, []engine.Finding) {
	t.Helper()
	c := NodeListeners(f.env)
	assert.Equal(t, "LA201", c.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := c.Run(ctx)
	st, reason := engine.StatusOf(o)
	assert.Empty(t, catalogue.Undeclared(c.ID, o.Findings), "%s emits findings without a declared code", c.ID)
	return st, reason, o.Findings
}

func TestCleanNodesPassAndTheResolvedStubIsSaidNotToBeAConflict(t *testing.T) {
	f := newLA201Fixture(t)
	f.node("node-1", la201Recording(t, "tables-clean.txt"), "").node("node-2", la201Recording(t, "tables-clean.txt"), "")
	st, _, fs := f.run(t)
	require.Equal(t, engine.StatusPass, st, "%+v", fs)
	var stub, nothing int
	for _, x := range fs {
		if strings.Contains(x.Message, "127.0.0.53:53 is systemd-resolved's stub listener") && strings.Contains(x.Message, "not a conflict") {
			stub++
		}
		if strings.Contains(x.Message, "nothing else listens on 53/tcp, 53/udp, 80/tcp, 443/tcp") {
			nothing++
		}
	}
	assert.Equal(t, 4, stub, "tcp and udp stub on each of two nodes")
	assert.Equal(t, 2, nothing)
	for _, c := range f.exec.Calls() {
		assert.NotEqual(t, "kube-system/kube-proxy-node-3", c.Pod.String(), "node-3 carries no address and is not read")
	}
}

func TestAListenerOnNode2FailsNamingTheNodeThePortAndTheProcess(t *testing.T) {
	f := newLA201Fixture(t)
	f.node("node-1", la201Recording(t, "tables-clean.txt"), "").
		node("node-2", la201Recording(t, "tables-conflict.txt"), la201Recording(t, "owners-conflict.txt"))
	st, _, fs := f.run(t)
	require.Equal(t, engine.StatusFail, st)
	fails := engine.WithSeverity(fs, engine.SeverityFail)
	require.Len(t, fails, 3, "%+v", fails)
	byPort := map[int]engine.Finding{}
	for _, x := range fails {
		assert.Equal(t, "node-2 (10.0.10.12)", x.Object)
		byPort[x.Evidence["port"].(int)] = x
	}
	web := byPort[80]
	assert.Contains(t, web.Message, "0.0.0.0:80/tcp on node-2")
	assert.Contains(t, web.Message, "pid 15500")
	assert.Contains(t, web.Message, "traefik/traefik")
	assert.Equal(t, "python3.11", web.Evidence["command"])
	assert.Equal(t, 15500, web.Evidence["pid"])
	assert.Contains(t, web.Remediation, "systemctl status 15500")
	assert.Contains(t, web.Remediation, "ss -tlpn 'sport = :80'")
	assert.Contains(t, byPort[53].Message, "10.0.10.12:53/udp")
	assert.Contains(t, byPort[53].Message, "lan-dns/lan-dns")
	assert.Contains(t, byPort[443].Message, "[::]:443/tcp")
	assert.Contains(t, byPort[443].Message, "IPV6_V6ONLY")
}

func TestThePortsComeFromTheServicesNotAFixedList(t *testing.T) {
	f := newLA201Fixture(t)
	f.env.Setup.ProxyService.Spec.Ports = []corev1.ServicePort{{Port: 8080, Protocol: corev1.ProtocolTCP}, {Port: 8443, Protocol: corev1.ProtocolTCP}}
	f.node("node-1", la201Recording(t, "tables-clean.txt"), "").
		node("node-2", la201Recording(t, "tables-conflict.txt"), la201Recording(t, "owners-conflict.txt"))
	st, _, fs := f.run(t)
	require.Equal(t, engine.StatusFail, st)
	fails := engine.WithSeverity(fs, engine.SeverityFail)
	require.Len(t, fails, 1, "only 53/udp is a Service port now")
	assert.Equal(t, 53, fails[0].Evidence["port"])
}

func TestWithNoHelpersNothingIsExecutedOrCreatedAndTheCheckSkipsSayingWhy(t *testing.T) {
	f := newLA201Fixture(t)
	f.env.NoHelpers = true
	st, reason, _ := f.run(t)
	assert.Equal(t, engine.StatusSkip, st)
	assert.Contains(t, reason, "--no-helpers")
	assert.Empty(t, f.exec.Calls())
	for _, a := range f.client.Actions() {
		assert.Contains(t, []string{"list", "get", "watch"}, a.GetVerb(), "a write happened: %v", a)
	}
}

func TestAHostPortPodOnTheServicePortFailsFromTheAPIEvenWithoutHelpers(t *testing.T) {
	intruder := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "svclb-traefik-x"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "lb-tcp-80",
			Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	f := newLA201Fixture(t, intruder)
	f.env.NoHelpers = true
	st, _, fs := f.run(t)
	require.Equal(t, engine.StatusFail, st)
	fails := engine.WithSeverity(fs, engine.SeverityFail)
	require.Len(t, fails, 1)
	assert.Equal(t, "node-1 (10.0.10.11)", fails[0].Object)
	assert.Contains(t, fails[0].Message, "pod kube-system/svclb-traefik-x (container lb-tcp-80) claims 80/tcp by hostPort")
	assert.Contains(t, fails[0].Remediation, "kubectl -n kube-system get pod svclb-traefik-x")
	warns := engine.WithSeverity(fs, engine.SeverityWarn)
	assert.NotEmpty(t, warns, "the unread sockets are said next to the failure")
}

func TestTheServicesOwnHostNetworkEndpointIsNotAConflict(t *testing.T) {
	traefik := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik-abc"},
		Spec: corev1.PodSpec{NodeName: "node-2", HostNetwork: true, Containers: []corev1.Container{{Name: "traefik",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 443}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	f := newLA201Fixture(t, traefik)
	f.env.Setup.ProxyPods = []corev1.Pod{*traefik}
	f.node("node-1", la201Recording(t, "tables-clean.txt"), "").
		node("node-2", la201Recording(t, "tables-conflict.txt"), la201Recording(t, "owners-conflict.txt"))
	st, _, fs := f.run(t)
	require.Equal(t, engine.StatusFail, st, "53/udp is still someone else's")
	fails := engine.WithSeverity(fs, engine.SeverityFail)
	require.Len(t, fails, 1)
	assert.Equal(t, 53, fails[0].Evidence["port"])
	var endpointInfo int
	for _, x := range engine.WithSeverity(fs, engine.SeverityInfo) {
		if strings.Contains(x.Message, "traefik/traefik-abc") {
			endpointInfo++
		}
	}
	assert.Equal(t, 4, endpointInfo, "two claims by spec and two sockets attributed to the endpoint")
}

func TestAReaderWithoutHostPIDSaysWhyTheProcessIsUnnamed(t *testing.T) {
	f := newLA201Fixture(t)
	for _, n := range []string{"node-1", "node-2"} {
		p, err := f.client.CoreV1().Pods("kube-system").Get(context.Background(), "kube-proxy-"+n, metav1.GetOptions{})
		require.NoError(t, err)
		p.Spec.HostPID = false
		_, err = f.client.CoreV1().Pods("kube-system").Update(context.Background(), p, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	f.node("node-1", la201Recording(t, "tables-clean.txt"), "").node("node-2", la201Recording(t, "tables-conflict.txt"), "")
	st, _, fs := f.run(t)
	require.Equal(t, engine.StatusFail, st)
	for _, x := range engine.WithSeverity(fs, engine.SeverityFail) {
		assert.Contains(t, x.Message, "does not share the node's PID namespace")
		assert.NotContains(t, x.Evidence, "pid")
	}
	for _, c := range f.exec.Calls() {
		assert.NotContains(t, strings.Join(c.Command, " "), "ls -l /proc", "no owner scan without host PIDs")
	}
}

// helperFixture has no usable existing pod: exec into kube-proxy is denied, so helpers are made.
func helperFixture(t *testing.T, kubelet func(*corev1.Pod), createErr error) *la201Fixture {
	t.Helper()
	f := newLA201Fixture(t)
	f.exec.On("", "cat /proc/net/tcp", kubetest.Reply{Err: fmt.Errorf("exec: %w", apierrors.NewForbidden(corev1.Resource("pods/exec"), "kube-proxy", errors.New("denied")))})
	f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if createErr != nil {
			return true, nil, createErr
		}
		kubelet(a.(k8stesting.CreateAction).GetObject().(*corev1.Pod))
		return false, nil, nil
	})
	return f
}

func TestHelperPodsReadTheNodesAndAreAllDeletedAfterwards(t *testing.T) {
	f := helperFixture(t, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "reader", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}, nil)
	// Helper pods are the only pods in namespace lanaccess.
	f.exec.On("", "@@lanaccess-table", kubetest.Reply{Stdout: la201Recording(t, "tables-clean.txt")})
	st, _, fs := f.run(t)
	require.Equal(t, engine.StatusPass, st, "%+v", fs)
	created := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			created++
		}
	}
	assert.Equal(t, 2, created, "one helper per node that carries an address")
	left, err := f.client.CoreV1().Pods("lanaccess").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, left.Items)
	for _, x := range fs {
		if ev, ok := x.Evidence["readVia"]; ok {
			assert.Contains(t, ev, "helper pod lanaccess/lanaccess-t1-")
		}
	}
}

func TestAPodSecurityRejectionSkipsNamingTheFlagThatHelps(t *testing.T) {
	f := helperFixture(t, nil, apierrors.NewForbidden(corev1.Resource("pods"), "x",
		errors.New(`violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true, hostPID=true)`)))
	st, reason, _ := f.run(t)
	assert.Equal(t, engine.StatusSkip, st)
	assert.Contains(t, reason, "Pod Security")
	assert.Contains(t, reason, "--helper-namespace")
	assert.Contains(t, reason, "--no-helpers")
}

func TestAnImageThatNeverPullsIsAnErrorNamingImage(t *testing.T) {
	f := helperFixture(t, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "reader", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "dial tcp: lookup registry-1.docker.io: no such host"}}}}
	}, nil)
	st, reason, _ := f.run(t)
	assert.Equal(t, engine.StatusError, st)
	assert.Contains(t, reason, "--image")
	left, err := f.client.CoreV1().Pods("lanaccess").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, left.Items)
}

func TestAnUnreadableRowIsAnErrorNotAPass(t *testing.T) {
	f := newLA201Fixture(t)
	broken := strings.Replace(la201Recording(t, "tables-clean.txt"), "00000000:0016", "0000:0016", 1)
	f.node("node-1", la201Recording(t, "tables-clean.txt"), "").node("node-2", broken, "")
	st, reason, _ := f.run(t)
	assert.Equal(t, engine.StatusError, st)
	assert.Contains(t, reason, "node node-2")
	assert.Contains(t, reason, "/proc/net/tcp")
}

func TestAnAddressNoNodeCarriesIsSaidAndNotRead(t *testing.T) {
	f := newLA201Fixture(t)
	f.env.Setup.DNSService.Spec.ExternalIPs = append(f.env.Setup.DNSService.Spec.ExternalIPs, "10.0.10.99")
	f.node("node-1", la201Recording(t, "tables-clean.txt"), "").node("node-2", la201Recording(t, "tables-clean.txt"), "")
	st, _, fs := f.run(t)
	require.Equal(t, engine.StatusPass, st)
	var found bool
	for _, x := range fs {
		if x.Object == "10.0.10.99" && strings.Contains(x.Message, "no node") {
			found = true
		}
	}
	assert.True(t, found)
}

func TestExecTimeoutBoundsEveryNodeRead(t *testing.T) {
	f := newLA201Fixture(t)
	f.env.ExecTimeout = 200 * time.Millisecond
	for _, node := range []string{"node-1", "node-2"} {
		pod := "kube-system/kube-proxy-" + node
		f.exec.On(pod, "cat /proc/net/tcp", kubetest.Reply{Stdout: "  sl  local_address\n"}).
			On(pod, "@@lanaccess-table", kubetest.Reply{Delay: time.Minute})
	}
	start := time.Now()
	st, reason, _ := f.run(t)
	assert.Equal(t, engine.StatusError, st, "a read that did not finish is unknown, not a pass")
	assert.Contains(t, reason, "deadline")
	assert.Less(t, time.Since(start), 5*time.Second, "--exec-timeout, not the minute the command would take")
}

// A tenant who runs hostNetwork pods (with the host's PID namespace, so they would have been
// preferred) and holds port 80 would answer "clean" for the nodes if LA201 read through them.
// LA201 reads through its own helper instead, and sees the listener.
func TestATenantsHostNetworkPodIsNeverTheReader(t *testing.T) {
	tenants := make([]runtime.Object, 0, 2)
	for _, node := range []string{"node-1", "node-2"} {
		tenants = append(tenants, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "exporter-" + node},
			Spec:       corev1.PodSpec{NodeName: node, HostNetwork: true, HostPID: true, Containers: []corev1.Container{{Name: "x"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "x", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
		})
	}
	f := newLA201Fixture(t, tenants...)
	f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "reader", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		return false, nil, nil
	})
	denied := kubetest.Reply{Err: apierrors.NewForbidden(corev1.Resource("pods/exec"), "kube-proxy", errors.New("denied"))}
	f.exec.On("tenant-a/exporter-node-1", "", kubetest.Reply{Stdout: la201Recording(t, "tables-clean.txt")}).
		On("tenant-a/exporter-node-2", "", kubetest.Reply{Stdout: la201Recording(t, "tables-clean.txt")}).
		On("kube-system/kube-proxy-node-1", "", denied).
		On("kube-system/kube-proxy-node-2", "", denied).
		On("", "@@lanaccess-table", kubetest.Reply{Stdout: la201Recording(t, "tables-conflict.txt")})
	st, _, fs := f.run(t)
	require.Equal(t, engine.StatusFail, st, "%+v", fs)
	for _, c := range f.exec.Calls() {
		assert.NotEqual(t, "tenant-a", c.Pod.Namespace, "exec into the tenant's pod: %v", c.Command)
	}
	for _, x := range engine.WithSeverity(fs, engine.SeverityFail) {
		if x.Code == "LA201-PROCESS-LISTENS" {
			assert.Contains(t, x.Evidence["readVia"], "helper pod lanaccess/")
			assert.Contains(t, x.Message, "the helper reads the socket tables only", "the owner is said to be unnamed, and why")
			assert.NotContains(t, x.Evidence, "pid")
		}
	}
}

// A helper the run cannot delete is a warning naming the pod and the cleanup command of the run.
func TestAHelperThatCannotBeDeletedIsAWarningWithTheCleanupCommand(t *testing.T) {
	f := helperFixture(t, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "reader", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}, nil)
	f.client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "x", errors.New(`User "ci" cannot delete resource "pods"`))
	})
	f.exec.On("", "@@lanaccess-table", kubetest.Reply{Stdout: la201Recording(t, "tables-clean.txt")})
	st, _, fs := f.run(t)
	assert.Equal(t, engine.StatusWarn, st, "the nodes are clean, but pods were left")
	var left []engine.Finding
	for _, x := range fs {
		if x.Code == "LA201-HELPER-LEFT" {
			left = append(left, x)
		}
	}
	require.Len(t, left, 2, "one per node read")
	for _, x := range left {
		assert.Equal(t, engine.SeverityWarn, x.Severity)
		assert.Regexp(t, `helper pod lanaccess/lanaccess-t1-\d+-node-\d could not be deleted`, x.Message)
		assert.Contains(t, x.Message, "cannot delete resource")
		assert.Equal(t, "kubectl lanaccess cleanup -n lanaccess --run-id t1", x.Remediation)
	}
}

// A second NIC: node-3 carries 10.0.10.23 on lan1, an address its status.addresses do not
// list (recorded in a namespace shaped so: addrs-second-nic.txt, tables-second-nic.txt with a
// listener on 10.0.10.23:443 and another on 10.0.10.13:80). kube-proxy captures the externalIP
// on node-3 whatever the interface, so LA201 reads node-3 and judges sockets on 10.0.10.23.
func TestAnAddressOnASecondInterfaceIsReadOnTheNodeThatCarriesIt(t *testing.T) {
	f := newLA201Fixture(t)
	f.env.Setup.ProxyService.Spec.ExternalIPs = append(f.env.Setup.ProxyService.Spec.ExternalIPs, "10.0.10.23")
	clean := func(ip string) string {
		return "@@lanaccess-ip-addr\n2: eth0    inet " + ip + "/24 scope global eth0\\\n@@lanaccess-links\neth0\nlo\n"
	}
	f.node("node-1", la201Recording(t, "tables-clean.txt"), "").
		node("node-2", la201Recording(t, "tables-clean.txt"), "").
		node("node-3", la201Recording(t, "tables-second-nic.txt"), "")
	f.exec.On("kube-system/kube-proxy-node-1", "@@lanaccess-ip-addr", kubetest.Reply{Stdout: clean("10.0.10.11")}).
		On("kube-system/kube-proxy-node-2", "@@lanaccess-ip-addr", kubetest.Reply{Stdout: clean("10.0.10.12")}).
		On("kube-system/kube-proxy-node-3", "@@lanaccess-ip-addr", kubetest.Reply{Stdout: la201Recording(t, "addrs-second-nic.txt")})
	f.env.Reader = &noderead.NodeNetReader{Shells: f.env.Shells, Limit: 5 * time.Second}
	st, _, fs := f.run(t)
	require.Equal(t, engine.StatusFail, st, "%+v", fs)
	fails := engine.WithSeverity(fs, engine.SeverityFail)
	require.Len(t, fails, 1, "the listener on the InternalIP's port 80 is not on a captured address: %+v", fails)
	assert.Equal(t, "node-3 (10.0.10.23)", fails[0].Object)
	assert.Equal(t, "10.0.10.23:443", fails[0].Evidence["socket"])
	assert.Contains(t, fails[0].Message, "traefik/traefik")
	for _, x := range fs {
		assert.NotEqual(t, "LA201-NO-NODE", x.Code, "the address is placed: %+v", x)
	}
}

// Without the node reads, the same address is said to be unplaced, with why.
func TestAnUnlistedAddressWithoutNodeReadsSaysTheNodesWereNotRead(t *testing.T) {
	f := newLA201Fixture(t)
	f.env.Setup.ProxyService.Spec.ExternalIPs = append(f.env.Setup.ProxyService.Spec.ExternalIPs, "10.0.10.23")
	f.node("node-1", la201Recording(t, "tables-clean.txt"), "").node("node-2", la201Recording(t, "tables-clean.txt"), "")
	f.env.Reader = &noderead.NodeNetReader{Unavailable: "the test reads no node"}
	_, _, fs := f.run(t)
	var said string
	for _, x := range fs {
		if x.Code == "LA201-NO-NODE" {
			said = x.Message
		}
	}
	assert.Contains(t, said, "not read: the test reads no node")
}

// An address a node lists as its ExternalIP (status.addresses) is that node's, read like an
// InternalIP.
func TestAnExternalIPTypedNodeAddressIsCarried(t *testing.T) {
	n := la201Node("node-1", "192.168.5.11")
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "10.0.10.11"})
	got, orphans := listenerNodes([]corev1.Node{n}, nil, targetsService("traefik", "traefik", []string{"10.0.10.11"}, corev1.ServicePort{Port: 443}))
	require.Len(t, got, 1)
	assert.Empty(t, orphans)
	assert.Equal(t, "node-1", got[0].Node.Name)
}
