package kube_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

func corpusCase(t *testing.T, name string) *kube.Setup {
	t.Helper()
	objs, err := fixture.Load(filepath.Join("..", "..", "testdata", "corpus", name, "objects.yaml"))
	require.NoError(t, err)
	cs, dc, err := fixture.Clients(objs)
	require.NoError(t, err)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{AllNamespaces: true})
	require.NoError(t, err)
	return s
}

// k3s mounts ConfigMap coredns at /etc/coredns and the optional coredns-custom at
// /etc/coredns/custom; CoreDNS reads -conf /etc/coredns/Corefile, which imports *.server and
// *.override from coredns-custom: one Corefile, not two.
func TestDiscoverReadsK3sCorednsCustomAsImportedFiles(t *testing.T) {
	s := corpusCase(t, "k3s-coredns-custom-server-import")
	require.NotNil(t, s.ConfigMap)
	assert.Equal(t, "kube-system/coredns", s.ConfigMap.Namespace+"/"+s.ConfigMap.Name)
	assert.Equal(t, "Corefile", s.CorefileKey)
	assert.Equal(t, "/etc/coredns/Corefile", s.CorefileConf)
	assert.Equal(t, "apps.example.com.", s.Zone.FQDN())
	require.NotNil(t, s.Corefile)
	assert.True(t, s.Corefile.Starts())
	var matched []string
	for _, imp := range s.Corefile.Imports {
		matched = append(matched, imp.Matched...)
	}
	assert.Equal(t, []string{"/etc/coredns/custom/lan.server"}, matched)
	f, ok := s.Corefile.Files().Read("/etc/coredns/custom/lan.server")
	require.True(t, ok)
	assert.Equal(t, "ConfigMap kube-system/coredns-custom key lan.server", f.From())
	assert.True(t, s.ZoneAnswers.Known, s.ZoneAnswers.Why)
	assert.Equal(t, "ConfigMap kube-system/coredns-custom key lan.server (zone apps.example.com.)", s.ZoneAnswers.Object)
	assert.Len(t, s.ZoneAnswers.Addrs(), 3)
}

// The template README's pattern: the zone is served by zone-scoped templates in the "." block.
func TestDiscoverFindsAZoneServedByTemplatesInTheDotBlock(t *testing.T) {
	s := corpusCase(t, "coredns-chart-zone-in-dot-block")
	assert.Equal(t, "apps.example.com.", s.Zone.FQDN())
	assert.Equal(t, "1053", s.ZonePort())
	assert.True(t, s.ZoneAnswers.Known, s.ZoneAnswers.Why)
	assert.True(t, s.ZoneAnswers.AAAA.NoData())
}

func TestDiscoverSaysWhyAZoneComputedFromTheNameCannotBeListed(t *testing.T) {
	s := corpusCase(t, "template-readme-regex-ip-names")
	assert.Equal(t, "apps.example.com.", s.Zone.FQDN())
	assert.False(t, s.ZoneAnswers.Known)
	assert.Contains(t, s.ZoneAnswers.Why, "computed from the name asked")
}

func TestDiscoverSplitsTheZonesAnswersByFamily(t *testing.T) {
	s := corpusCase(t, "dual-stack-a-and-aaaa")
	require.True(t, s.ZoneAnswers.Known)
	assert.Len(t, s.ZoneAnswers.Addrs(), 3)
	assert.Len(t, s.ZoneAnswers.Addrs6(), 3)
	for _, a := range s.ZoneAnswers.Addrs6() {
		assert.True(t, a.Is6())
	}
}

func TestPodFilesProjectKeysItemsSubPathAndOptionalConfigMaps(t *testing.T) {
	cm := &corev1.ConfigMap{Data: map[string]string{"Corefile": "x", "db": "y"}}
	cm.Name, cm.Namespace = "conf", "ns"
	spec := &corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "items", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, Items: []corev1.KeyToPath{{Key: "db", Path: "zones/db.apps"}}}}},
			{Name: "one", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
			{Name: "opt", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: new(true)}}},
			{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
		},
		Containers: []corev1.Container{{Name: "coredns", Args: []string{"-conf", "/etc/coredns/Corefile"}, VolumeMounts: []corev1.VolumeMount{
			{Name: "items", MountPath: "/etc/zones"},
			{Name: "one", MountPath: "/etc/coredns/Corefile", SubPath: "Corefile"},
			{Name: "opt", MountPath: "/etc/coredns/custom"},
			{Name: "secret", MountPath: "/etc/coredns/tls"},
		}}},
	}
	c := kube.CoreDNSContainer(spec)
	require.NotNil(t, c)
	assert.Equal(t, "/etc/coredns/Corefile", kube.ConfPath(c))
	files, projected := kube.PodFiles(spec, c, map[string]*corev1.ConfigMap{"conf": cm}, func(n string) bool { return n == "conf" })
	_, ok := files.Read("/etc/zones/zones/db.apps")
	assert.True(t, ok, "items are projected at their paths")
	_, ok = files.Read("/etc/zones/Corefile")
	assert.False(t, ok, "only the listed items are projected")
	assert.True(t, files.Known("/etc/zones/Corefile"))
	f, ok := files.Read("/etc/coredns/Corefile")
	require.True(t, ok, "the subPath mount is one file")
	assert.Equal(t, "Corefile", f.Key)
	assert.True(t, files.Known("/etc/coredns/custom/x.server"), "an optional ConfigMap that does not exist is an empty directory")
	assert.False(t, files.Known("/etc/coredns/tls/key.pem"), "a Secret's content is not read")
	assert.NotEmpty(t, projected)
}

func TestDiscoverWithoutConfReadsTheWorkingDirectorysCorefile(t *testing.T) {
	cs, dc := cluster(t, deployment("lan-dns", "lan-dns", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Args = nil
	}), func(objs []runtime.Object) []runtime.Object {
		var out []runtime.Object
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok && p.Namespace == "lan-dns" {
				continue
			}
			out = append(out, o)
		}
		return out
	})
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	assert.Equal(t, "/Corefile", s.CorefileConf, "the official image's WORKDIR is /")
	require.NotNil(t, s.ConfigMap, "the mounted ConfigMap is kept for LA104 to say it is not read")
	assert.Empty(t, s.CorefileKey)
}

func TestZoneAnswersFollowTheQueryModel(t *testing.T) {
	cs, dc := cluster(t)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	assert.Equal(t, "1053", s.ZonePort())
	assert.Equal(t, dns.RcodeSuccess, s.ZoneAnswers.A.Rcode)
	assert.True(t, s.ZoneAnswers.AAAA.NoData())
}

// A template gated by `match` answers the routed hosts and not the apex: the zone's answers are
// read for the names workstations ask (the real CoreDNS v1.14.7 gives grafana and wiki the three
// addresses: testdata/corpus/template-match-routed-hosts/coredns.yaml).
func TestDiscoverReadsTheZoneNameByNameForTheRoutedHosts(t *testing.T) {
	s := corpusCase(t, "template-match-routed-hosts")
	require.True(t, s.ZoneAnswers.Known, s.ZoneAnswers.Why)
	assert.Equal(t, "grafana.apps.example.com.", s.ZoneAnswers.ByName[0])
	assert.Equal(t, "[10.0.10.11 10.0.10.12 10.0.10.13]", fmtAddrs(s.ZoneAnswers.Addrs()))
}

// hosts inline entries answer the routed hosts; the container's /etc/hosts is the kubelet's,
// which holds no name of the zone.
func TestDiscoverReadsInlineHostsEntriesAsTheZonesAnswers(t *testing.T) {
	s := corpusCase(t, "hosts-inline-zone-alone")
	require.True(t, s.ZoneAnswers.Known, s.ZoneAnswers.Why)
	assert.Len(t, s.ZoneAnswers.Addrs(), 3)
	f, ok := s.Corefile.Files().Read("/etc/hosts")
	require.True(t, ok)
	assert.Contains(t, f.Content, "Kubernetes-managed hosts file")
}

// The pods run CoreDNS v1.11.1, whose hosts plugin reads `*.apps.example.com` as a literal name:
// grafana gets SERVFAIL, so the zone answers no address at all.
func TestDiscoverJudgesHostsWildcardsByTheImagesVersion(t *testing.T) {
	s := corpusCase(t, "hosts-wildcard-on-older-coredns")
	assert.Equal(t, "v1.11.1", s.Corefile.Files().Build.Version())
	require.True(t, s.ZoneAnswers.Known, s.ZoneAnswers.Why)
	assert.Empty(t, s.ZoneAnswers.Addrs())
}

func fmtAddrs[T interface{ String() string }](as []T) string {
	out := "["
	for i, a := range as {
		if i > 0 {
			out += " "
		}
		out += a.String()
	}
	return out + "]"
}
