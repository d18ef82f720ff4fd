package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

func TestCorefileConfigBrokenVariants(t *testing.T) {
	runBrokenVariants(t, "la104-")
}

func withCorefile(text string) func(*corev1.ConfigMap) {
	return func(cm *corev1.ConfigMap) { cm.Data["Corefile"] = text }
}

func TestCorefileConfigSyntaxErrorNamesTheLine(t *testing.T) {
	env := configEnv(t, nil, editObject("lan-dns", "lan-dns", withCorefile("apps.example.com:1053 {\n  reload\n  template IN A {\n")))
	st, o := runConfigCheck(t, CorefileConfig(env))
	assert.Equal(t, engine.StatusFail, st)
	require.Len(t, o.Findings, 1)
	assert.Equal(t, 3, o.Findings[0].Evidence["line"])
	assert.Contains(t, o.Findings[0].Message, "ConfigMap lan-dns/lan-dns key Corefile line 3")
}

func TestCorefileConfigNamedZoneThatNoBlockServesFails(t *testing.T) {
	env := configEnvWith(t, kube.Selection{Zone: zone.MustParse("lan.example.com")}, nil, nil)
	st, o := runConfigCheck(t, CorefileConfig(env))
	assert.Equal(t, engine.StatusFail, st)
	require.Len(t, o.Findings, 1)
	assert.Contains(t, o.Findings[0].Message, "no server block serves the zone lan.example.com.")
	assert.Contains(t, o.Findings[0].Remediation, "lan.example.com:1053 {")
}

func TestCorefileConfigImportsAndPlaceholderPortsAreInformation(t *testing.T) {
	env := configEnv(t, nil, editObject("lan-dns", "lan-dns", withCorefile(
		"apps.example.com:{$PORT} {\n reload\n template IN A {\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n  answer \"{{ .Name }} 60 IN A 10.0.10.12\"\n  answer \"{{ .Name }} 60 IN A 10.0.10.13\"\n }\n template ANY ANY {\n }\n import /etc/coredns/extra/*.conf\n}\n.:{$PORT} {\n reload\n forward . /etc/resolv.conf\n}\n")))
	st, o := runConfigCheck(t, CorefileConfig(env))
	assert.Equal(t, engine.StatusPass, st, "%+v", o.Findings)
	info := configFindings(o, engine.SeverityInfo, "ConfigMap lan-dns/lan-dns")
	require.Len(t, info, 2)
	assert.Contains(t, info[0].Message, "line 10 imports /etc/coredns/extra/*.conf")
	assert.Contains(t, info[1].Message, "listens on {$PORT}")
}

func TestCorefileConfigAnswerForAFixedNameWarns(t *testing.T) {
	env := configEnv(t, nil, editObject("lan-dns", "lan-dns", func(cm *corev1.ConfigMap) {
		cm.Data["Corefile"] = "apps.example.com:1053 {\n reload\n template IN A {\n  answer \"grafana.apps.example.com. 60 IN A 10.0.10.11\"\n }\n template ANY ANY {\n }\n}\n.:1053 {\n reload\n forward . /etc/resolv.conf\n}\n"
	}))
	st, o := runConfigCheck(t, CorefileConfig(env))
	assert.Equal(t, engine.StatusWarn, st)
	f := configFindings(o, engine.SeverityWarn, "ConfigMap lan-dns/lan-dns")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "line 4: the answer's owner is fixed")
}

func TestCorefileConfigNXDOMAINForOtherTypesFails(t *testing.T) {
	env := configEnv(t, nil, editObject("lan-dns", "lan-dns", func(cm *corev1.ConfigMap) {
		cm.Data["Corefile"] = "apps.example.com:1053 {\n reload\n template IN A {\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n }\n template ANY ANY {\n  rcode NXDOMAIN\n }\n}\n.:1053 {\n reload\n forward . /etc/resolv.conf\n}\n"
	}))
	_, o := runConfigCheck(t, CorefileConfig(env))
	f := configFindings(o, engine.SeverityFail, "ConfigMap lan-dns/lan-dns")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "get NXDOMAIN")
	assert.Contains(t, f[0].Remediation, `rcode NOERROR`)
}

func TestCorefileConfigZoneFileThatDoesNotParseNamesTheLine(t *testing.T) {
	env := configEnv(t, nil, editObject("lan-dns", "lan-dns", func(cm *corev1.ConfigMap) {
		cm.Data["Corefile"] = "apps.example.com:1053 {\n reload\n file /etc/coredns/db.apps\n}\n.:1053 {\n reload\n forward . /etc/resolv.conf\n}\n"
		cm.Data["db.apps"] = "$TTL 60\n@ IN SOA ns host 1 2 3 4 5\n* IN A 10.0.10.999\n"
	}))
	_, o := runConfigCheck(t, CorefileConfig(env))
	f := configFindings(o, engine.SeverityFail, "ConfigMap lan-dns/lan-dns")
	require.Len(t, f, 1, "%+v", o.Findings)
	assert.Contains(t, f[0].Message, `CoreDNS refuses to start: line 3: plugin/file: failed to parse file "/etc/coredns/db.apps"`)
}

func TestCorefileConfigIsSkippedWhenConfigMapsCannotBeRead(t *testing.T) {
	env := configEnv(t, nil, nil)
	env.Setup.ConfigMap = nil
	env.Setup.Partial["configmaps in lan-dns"] = apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC"))
	st, o := runConfigCheck(t, CorefileConfig(env))
	assert.Equal(t, engine.StatusSkip, st)
	assert.Contains(t, o.Skip, "could not read configmaps in lan-dns")
}

// An import of a path the API does not show may define the zone: LA104 cannot tell, and never
// proposes a zone block that CoreDNS could refuse as defined twice.
func TestCorefileConfigNeverAddsAZoneBlockBesideAnImportItCannotRead(t *testing.T) {
	env := configEnvWith(t, kube.Selection{Zone: zone.MustParse("apps.example.com")}, nil, editObject("lan-dns", "lan-dns", withCorefile(
		"import /opt/zones/*.server\n.:1053 {\n reload\n forward . /etc/resolv.conf\n}\n")))
	st, o := runConfigCheck(t, CorefileConfig(env))
	assert.Equal(t, engine.StatusWarn, st, "%+v", o.Findings)
	for _, f := range o.Findings {
		assert.NotContains(t, f.Remediation, "apps.example.com:1053 {", "%s", f.Code)
		assert.NotEqual(t, "LA104-NO-ZONE-BLOCK", f.Code)
	}
	assert.NotEmpty(t, configFindings(o, engine.SeverityWarn, "ConfigMap lan-dns/lan-dns"))
}

// The subPath fix mounts the directory and points -conf at the file's name in the volume: the
// subPath, which the volume's items may have renamed (here key Corefile at path lan).
func TestCorefileConfigSubPathFixPointsConfAtTheFileInTheVolume(t *testing.T) {
	env := configEnv(t, nil, editObject("lan-dns", "lan-dns", func(d *appsv1.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Args = []string{"-conf", "/etc/coredns/Corefile.lan"}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns/Corefile.lan", SubPath: "lan"}}
		d.Spec.Template.Spec.Volumes[0].ConfigMap.Items = []corev1.KeyToPath{{Key: "Corefile", Path: "lan"}}
	}))
	_, o := runConfigCheck(t, CorefileConfig(env))
	f := configFindings(o, engine.SeverityWarn, "ConfigMap lan-dns/lan-dns")
	require.Len(t, f, 1, "%+v", o.Findings)
	assert.Equal(t, "LA104-SUBPATH", f[0].Code)
	assert.Contains(t, f[0].Remediation, `{"mountPath":"/etc/coredns","name":"config","readOnly":true}`)
	assert.Contains(t, f[0].Remediation, `"value":["-conf","/etc/coredns/lan"]`)
}

// The . block on the LAN's port carries `kubernetes` (the cluster DNS reused for the LAN): the LAN
// resolves every Service name. The real CoreDNS answers kubernetes.default.svc.cluster.local on
// that port (testdata/corpus/kubeadm-coredns-as-lan-dns/coredns.yaml).
func TestCorefileConfigClusterNamesOnTheLANFail(t *testing.T) {
	env := configEnv(t, nil, editObject("lan-dns", "lan-dns", withCorefile(
		"apps.example.com:1053 {\n reload\n template IN A {\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n  answer \"{{ .Name }} 60 IN A 10.0.10.12\"\n  answer \"{{ .Name }} 60 IN A 10.0.10.13\"\n }\n template ANY ANY {\n }\n}\n.:1053 {\n reload\n kubernetes cluster.local in-addr.arpa ip6.arpa {\n  pods insecure\n }\n forward . /etc/resolv.conf\n}\n")))
	st, o := runConfigCheck(t, CorefileConfig(env))
	assert.Equal(t, engine.StatusFail, st)
	codes := make([]string, 0, len(o.Findings))
	for _, f := range o.Findings {
		codes = append(codes, f.Code)
	}
	require.Equal(t, []string{"LA104-CLUSTER-NAMES"}, codes, "%+v", o.Findings)
	assert.Contains(t, o.Findings[0].Message, "`kubernetes cluster.local in-addr.arpa ip6.arpa` (line 13)")
	assert.Contains(t, o.Findings[0].Message, "pod names too")
}

// An image that is not a stock CoreDNS of a known version is judged as v1.14.7 with a WARN
// naming it: never a PASS on a build doctor does not know.
func TestCorefileConfigUnknownImageWarns(t *testing.T) {
	env := configEnv(t, nil, func(objs []runtime.Object) []runtime.Object {
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok && d.Name == "lan-dns" {
				d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/example/coredns-custom:2.0"
			}
			if p, ok := o.(*corev1.Pod); ok && strings.HasPrefix(p.Name, "lan-dns") {
				p.Spec.Containers[0].Image = "ghcr.io/example/coredns-custom:2.0"
			}
		}
		return objs
	})
	st, o := runConfigCheck(t, CorefileConfig(env))
	assert.Equal(t, engine.StatusWarn, st)
	require.NotEmpty(t, o.Findings)
	assert.Equal(t, "LA104-IMAGE-UNKNOWN", o.Findings[0].Code)
	assert.Contains(t, o.Findings[0].Message, "ghcr.io/example/coredns-custom:2.0")
}
