package kube_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

const healthyDir = "../../testdata/fixtures/healthy"

// cluster loads the healthy fixtures, lets mutate change them, and returns fake clients.
func cluster(t *testing.T, mutate ...func(objs []runtime.Object) []runtime.Object) (*fake.Clientset, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	objs, err := fixture.Load(healthyDir)
	require.NoError(t, err)
	for _, m := range mutate {
		objs = m(objs)
	}
	cs, dc, err := fixture.Clients(objs)
	require.NoError(t, err)
	return cs, dc
}

// named changes, with f, the fixture objects of type T named ns/name.
func named[T metav1.Object](ns, name string, f func(T)) func([]runtime.Object) []runtime.Object {
	return func(objs []runtime.Object) []runtime.Object {
		for _, o := range objs {
			if x, ok := o.(T); ok && x.GetNamespace() == ns && x.GetName() == name {
				f(x)
			}
		}
		return objs
	}
}

func service(ns, name string, f func(*corev1.Service)) func([]runtime.Object) []runtime.Object {
	return named(ns, name, f)
}

func deployment(ns, name string, f func(*appsv1.Deployment)) func([]runtime.Object) []runtime.Object {
	return named(ns, name, f)
}

func add(extra ...runtime.Object) func([]runtime.Object) []runtime.Object {
	return func(objs []runtime.Object) []runtime.Object { return append(objs, extra...) }
}

func usageError(t *testing.T, err error) *kube.UsageError {
	t.Helper()
	var u *kube.UsageError
	require.True(t, errors.As(err, &u), "want a UsageError, got %v", err)
	return u
}

func TestDiscoverFindsEveryPartOfTheHealthySetup(t *testing.T) {
	cs, dc := cluster(t)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)

	assert.Equal(t, "traefik/traefik", s.ProxyService.Namespace+"/"+s.ProxyService.Name)
	assert.Equal(t, "lan-dns/lan-dns", s.DNSService.Namespace+"/"+s.DNSService.Name)
	require.NotNil(t, s.ConfigMap)
	assert.Equal(t, "lan-dns", s.ConfigMap.Name)
	assert.Equal(t, "Corefile", s.CorefileKey)
	assert.Equal(t, "apps.example.com.", s.Zone.FQDN())
	require.NotNil(t, s.Corefile)
	assert.NoError(t, s.CorefileErr)
	assert.Equal(t, []kube.ConfigMapMount{{Container: "coredns", Volume: "config", MountPath: "/etc/coredns"}}, s.CorefileMounts)
	require.NotNil(t, s.DNSWorkload)
	assert.Equal(t, "lan-dns", s.DNSWorkload.Name)
	require.NotNil(t, s.ProxyWorkload)
	assert.Equal(t, "traefik", s.ProxyWorkload.Name)
	assert.Len(t, s.DNSPods, 2)
	assert.Len(t, s.ProxyPods, 2)
	assert.Len(t, s.Nodes, 3)
	assert.Len(t, s.EndpointSlices["lan-dns/lan-dns"], 1)
	assert.Len(t, s.EndpointSlices["traefik/traefik"], 1)
	assert.Len(t, s.PDBs, 1)
	// Only Services that claim an address are kept (the plain ClusterIP one is dropped).
	require.Len(t, s.Services, 2)
	for _, svc := range s.Services {
		assert.NotEmpty(t, svc.Spec.ExternalIPs, svc.Name)
	}
	assert.Len(t, s.Ingresses, 1)
	assert.Len(t, s.IngressClasses, 1)
	assert.Len(t, s.IngressRoutes, 1)
	assert.Len(t, s.Middlewares, 2)
	assert.Len(t, s.AdmissionPolicies, 1)
	assert.Len(t, s.AdmissionPolicyBindings, 1)
	assert.Empty(t, s.Partial)
	assert.True(t, s.Installed["ingressroutes.traefik.io"])
	assert.False(t, s.Installed["ingressroutes.traefik.containo.us"], "the old Traefik group is not installed")
	_, known := s.Installed["clusterpolicies.kyverno.io"]
	assert.True(t, known, "Kyverno's absence is recorded")
	assert.False(t, s.Installed["clusterpolicies.kyverno.io"])
}

func TestDiscoverMakesTheSameListCallsWhateverTheClusterSize(t *testing.T) {
	count := func(extra int) (int, []string) {
		objs := make([]runtime.Object, 0, 3*extra)
		for i := range extra {
			ns := fmt.Sprintf("team-%d", i)
			objs = append(objs,
				&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}}},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}},
				&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: map[string]string{"app": "lan-dns"}}},
			)
		}
		cs, dc := cluster(t, add(objs...))
		_, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
		require.NoError(t, err)
		var other []string
		n := 0
		for _, a := range append(cs.Actions(), dc.Actions()...) {
			switch {
			case a.GetVerb() == "list":
				n++
			case a.GetResource().Resource == "version":
			default:
				other = append(other, a.GetVerb()+" "+a.GetResource().Resource)
			}
		}
		return n, other
	}
	small, otherSmall := count(0)
	large, otherLarge := count(40)
	assert.Equal(t, small, large)
	assert.Empty(t, otherSmall, "no GET per object")
	assert.Empty(t, otherLarge)
}

func TestDiscoverPagesThroughLongLists(t *testing.T) {
	cs, dc := cluster(t)
	var continues []string
	cs.PrependReactor("list", "nodes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		opts := a.(clienttesting.ListActionImpl).ListOptions
		assert.Equal(t, int64(500), opts.Limit)
		continues = append(continues, opts.Continue)
		if opts.Continue == "" {
			l := &corev1.NodeList{Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "page-1"}}}}
			l.Continue = "next"
			return true, l, nil
		}
		return true, &corev1.NodeList{Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "page-2"}}}}, nil
	})
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	assert.Equal(t, []string{"", "next"}, continues)
	require.Len(t, s.Nodes, 2)
	assert.Equal(t, "page-2", s.Nodes[1].Name)
}

func TestDiscoverRespectsNamedObjects(t *testing.T) {
	other := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "proxy"},
		Spec:       corev1.ServiceSpec{ExternalIPs: []string{"10.0.10.21"}, Ports: []corev1.ServicePort{{Port: 443}}},
	}
	cs, dc := cluster(t, add(other))
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{ProxyService: "traefik/traefik", DNSService: "lan-dns", Namespace: "lan-dns", ConfigMap: "lan-dns", Zone: zone.MustParse("Apps.Example.com")})
	require.NoError(t, err)
	assert.Equal(t, "traefik", s.ProxyService.Name)
	assert.Equal(t, "lan-dns", s.DNSService.Name)
	assert.Equal(t, "apps.example.com.", s.Zone.FQDN())
}

func TestDiscoverNamedObjectsThatDoNotExistAreUsageErrorsNamingTheFlag(t *testing.T) {
	tests := []struct {
		name string
		sel  kube.Selection
		msg  string
		fix  string
	}{
		{"proxy Service", kube.Selection{ProxyService: "traefik/nope"}, `proxy Service "nope" not found in namespace traefik`, "--proxy-service"},
		{"DNS Service", kube.Selection{DNSService: "nope"}, `DNS Service "nope" not found in any namespace`, "--dns-service"},
		{"ConfigMap", kube.Selection{ConfigMap: "nope"}, "ConfigMap lan-dns/nope not found", "--configmap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, dc := cluster(t)
			_, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, tt.sel)
			u := usageError(t, err)
			assert.Contains(t, u.Message, tt.msg)
			assert.Contains(t, u.Fix, tt.fix)
		})
	}
}

func TestDiscoverSeveralOrNoCandidatesListsThemAndNamesTheFlag(t *testing.T) {
	// A second Service that is as much the proxy as the first (80 and 443 on the DNS
	// Service's addresses, Traefik's pods): nothing tells them apart.
	second := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik-copy"},
		Spec: corev1.ServiceSpec{
			ExternalIPs: []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"},
			Selector:    map[string]string{"app.kubernetes.io/name": "traefik"},
			Ports:       []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}, {Port: 443, Protocol: corev1.ProtocolTCP}},
		},
	}
	cs, dc := cluster(t, add(second))
	_, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	u := usageError(t, err)
	assert.Contains(t, u.Message, "2 Services with externalIPs expose 443/TCP")
	assert.Contains(t, u.Message, "none of them is the only one that exposes 80/TCP and 443/TCP on the addresses of Service lan-dns/lan-dns and selects pods running a traefik image")
	assert.Equal(t, []string{
		"traefik/traefik (ports 80/TCP,443/TCP; externalIPs 10.0.10.11,10.0.10.12,10.0.10.13)",
		"traefik/traefik-copy (ports 80/TCP,443/TCP; externalIPs 10.0.10.11,10.0.10.12,10.0.10.13)",
	}, u.Candidates)
	assert.Contains(t, u.Fix, "--proxy-service")

	cs, dc = cluster(t, service("lan-dns", "lan-dns", func(s *corev1.Service) { s.Spec.ExternalIPs = nil }))
	_, err = kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	u = usageError(t, err)
	assert.Contains(t, u.Message, "no Service with externalIPs exposes 53/UDP or 53/TCP")
	assert.Contains(t, u.Fix, "--dns-service")

	cs, dc = cluster(t)
	_, err = kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{Namespace: "monitoring"})
	u = usageError(t, err)
	assert.Contains(t, u.Message, "in namespace monitoring")
	assert.Contains(t, u.Fix, "--all-namespaces")
}

func TestDiscoverSeveralTemplateZonesAskForTheZoneFlag(t *testing.T) {
	cs, dc := cluster(t, func(objs []runtime.Object) []runtime.Object {
		for _, o := range objs {
			if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == "lan-dns" {
				cm.Data["Corefile"] += "other.example.com:1053 {\n template IN A {\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n }\n}\n"
			}
		}
		return objs
	})
	_, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	u := usageError(t, err)
	assert.ElementsMatch(t, []string{"apps.example.com.", "other.example.com."}, u.Candidates)
	assert.Contains(t, u.Fix, "--zone")

	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{Zone: zone.MustParse("other.example.com")})
	require.NoError(t, err)
	assert.Equal(t, "other.example.com.", s.Zone.FQDN())
}

func TestDiscoverSeesASubPathMountAndTheConfFile(t *testing.T) {
	cs, dc := cluster(t, deployment("lan-dns", "lan-dns", func(d *appsv1.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Args = []string{"-conf", "/etc/coredns/Corefile.lan"}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns/Corefile.lan", SubPath: "lan"}}
		d.Spec.Template.Spec.Volumes[0].ConfigMap.Items = []corev1.KeyToPath{{Key: "Corefile", Path: "lan"}}
	}))
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	require.Len(t, s.CorefileMounts, 1)
	assert.Equal(t, "lan", s.CorefileMounts[0].SubPath)
	assert.Equal(t, "Corefile", s.CorefileKey, "the subPath is mapped back through the volume's items")
}

func TestDiscoverAnUnparsableCorefileIsKeptForLA104NotAnError(t *testing.T) {
	cs, dc := cluster(t, func(objs []runtime.Object) []runtime.Object {
		for _, o := range objs {
			if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == "lan-dns" {
				cm.Data["Corefile"] = "apps.example.com:1053 {\n  reload\n"
			}
		}
		return objs
	})
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	require.Error(t, s.CorefileErr)
	assert.Contains(t, s.CorefileErr.Error(), "line 2")
	assert.Empty(t, s.Zone.FQDN())
}

func TestDiscoverRecordsForbiddenReadsAndCarriesOn(t *testing.T) {
	cs, dc := cluster(t)
	forbid := func(resource string) clienttesting.ReactionFunc {
		return func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC: access denied"))
		}
	}
	cs.PrependReactor("list", "ingresses", forbid("ingresses"))
	cs.PrependReactor("list", "nodes", forbid("nodes"))
	dc.PrependReactor("list", "middlewares", forbid("middlewares"))
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	assert.Error(t, s.Unread("ingresses.networking.k8s.io"))
	assert.Error(t, s.Unread("nodes"))
	assert.Error(t, s.Unread("middlewares.traefik.io"))
	assert.NoError(t, s.Unread("services"))
	assert.Empty(t, s.Nodes)
}

func TestDiscoverFallsBackToTheNamespaceWhenServicesCannotBeListedClusterWide(t *testing.T) {
	cs, dc := cluster(t)
	cs.PrependReactor("list", "services", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "", errors.New("cluster scope denied"))
		}
		return false, nil, nil
	})
	_, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	u := usageError(t, err)
	assert.Contains(t, u.Fix, "-n NAMESPACE")

	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{ProxyService: "traefik/traefik", DNSService: "lan-dns/lan-dns"})
	require.NoError(t, err)
	assert.Len(t, s.Services, 2, "only the named namespaces were listed")
	assert.Error(t, s.Unread("services"))
}

func TestDiscoverAnUnreachableAPIIsAPlainError(t *testing.T) {
	cs, dc := cluster(t)
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	cs.PrependReactor("*", "*", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, refused })
	_, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.Error(t, err)
	assert.False(t, kube.IsUsage(err))
	assert.ErrorIs(t, err, refused)
	assert.Contains(t, err.Error(), "list services")
}

func TestDiscoverWithoutADynamicClientSkipsCustomResources(t *testing.T) {
	cs, _ := cluster(t)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), nil, kube.Selection{})
	require.NoError(t, err)
	assert.Empty(t, s.IngressRoutes)
	assert.Empty(t, s.Middlewares)
	assert.Empty(t, s.Partial)
}

func TestDiscoverWithoutDNSPodsFallsBackToTheOnlyCorefileConfigMap(t *testing.T) {
	cs, dc := cluster(t, func(objs []runtime.Object) []runtime.Object {
		var out []runtime.Object
		for _, o := range objs {
			switch v := o.(type) {
			case *appsv1.Deployment:
				if v.Name == "lan-dns" {
					continue
				}
			case *corev1.Pod:
				if v.Namespace == "lan-dns" {
					continue
				}
			}
			out = append(out, o)
		}
		return out
	})
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	assert.Nil(t, s.DNSWorkload)
	require.NotNil(t, s.ConfigMap)
	assert.Equal(t, "lan-dns", s.ConfigMap.Name)
	assert.Empty(t, s.CorefileMounts)
}

func TestWarningCollectorKeepsDistinctWarnings(t *testing.T) {
	var w kube.WarningCollector
	w.HandleWarningHeader(299, "", "spec.externalIPs is deprecated")
	w.HandleWarningHeader(299, "", "spec.externalIPs is deprecated")
	w.HandleWarningHeader(199, "", "not a warning code")
	assert.Equal(t, []string{"spec.externalIPs is deprecated"}, w.Warnings())
}
