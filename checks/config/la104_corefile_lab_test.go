//go:build lab

package config

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/internal/corednsrun"
	"github.com/lanaccess/kubectl-lanaccess/internal/corefiletest"
	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// Differential tests: every Corefile doctor judges in testdata (the rule cases, the Corefiles
// of testdata/corefiles, the fixtures, every corpus case and variant) and every Corefile a fix
// of LA101, LA104 or LA105 writes is loaded by the real CoreDNS binary the lab builds, on
// loopback; whether it starts, with which error, and its answers to A and AAAA of the zone's
// names, a name outside and a cluster name must be what the model predicts. Where they differ,
// the model is wrong.

func realCoreDNS(t *testing.T) string {
	t.Helper()
	bin, err := corednsrun.CoreDNSBinary()
	require.NoError(t, err)
	return bin
}

// differ runs the real CoreDNS on files and holds the model to it.
func differ(t *testing.T, bin, name string, files *corefile.Files, conf, zone, probeHost string) corefiletest.Run {
	t.Helper()
	run, err := corednsrun.RunCoreDNS(t.Context(), bin, corefiletest.Mounts(files), conf, zone, corednsrun.Questions(zone, probeHost))
	require.NoError(t, err)
	// The binary is the lab's stock CoreDNS (lab/versions.env), whatever image the objects
	// name: the model judges as that build, as pkg/corefile's truth test does.
	files.Build = corefile.ReadBuild("registry.k8s.io/coredns/coredns:" + corednsrun.Version)
	cf, loadErr := corefile.Load(name, files, conf)
	v := corefiletest.Compare(cf, loadErr, run)
	for _, w := range v.Wrong {
		t.Errorf("the model is wrong: %s", w)
	}
	for _, u := range v.Unknown {
		assert.Contains(t, u, "plugin answers from data the configuration does not show", "only cluster data may stay unknown: %s", u)
	}
	return run
}

func TestTheRealCoreDNSFollowsEveryRuleTheModelKnows(t *testing.T) {
	bin := realCoreDNS(t)
	for _, r := range corefiletest.Rules {
		t.Run(r.Name, func(t *testing.T) {
			run := differ(t, bin, "rules", r.PodFiles(), corefiletest.Conf, "a", "")
			assert.Equal(t, r.Stops == "", run.Starts, "CoreDNS said: %s", run.Error)
			if r.Stops != "" {
				assert.Contains(t, run.Error, r.Stops)
			}
		})
	}
}

func TestTheRealCoreDNSAnswersEveryTestdataCorefileAsTheModelSays(t *testing.T) {
	bin := realCoreDNS(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "corefiles", "*.Corefile"))
	require.NoError(t, err)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			pod := corefile.NewFiles()
			pod.Env = map[string]string{"DNS_PORT": "1053", "TTL": "60"}
			pod.MountVolume("/etc/coredns", map[string]corefile.File{"Corefile": {Content: string(b)}})
			differ(t, bin, filepath.Base(f), pod, "/etc/coredns/Corefile", "apps.example.com", "grafana.apps.example.com")
		})
	}
}

// instancesOf discovers objs for the zone and probe host, and lists their CoreDNS instances.
func instancesOf(t *testing.T, objs []runtime.Object, sel kube.Selection) ([]corefiletest.Instance, *kube.Setup) {
	t.Helper()
	var setup *kube.Setup
	if env, err := discoverObjects(t, objs, sel); err == nil {
		setup = env.Setup
	}
	return corefiletest.Instances(objs), setup
}

func zoneOf(s *kube.Setup) (string, string) {
	if s == nil || s.Zone.IsZero() {
		return "apps.example.com", "grafana.apps.example.com"
	}
	return s.Zone.FQDN(), s.ProbeHost.Name
}

func TestTheRealCoreDNSAnswersEveryFixtureAndCorpusCaseAsTheModelSays(t *testing.T) {
	bin := realCoreDNS(t)
	var sets []roundTripCase
	sets = append(sets, roundTripCase{name: "fixture healthy", sel: kube.Selection{}})
	sets[0].objs, _ = fixture.Load(configHealthy)
	dirs, err := filepath.Glob(filepath.Join(configBroken, "*"))
	require.NoError(t, err)
	for _, d := range dirs {
		objs, err := fixture.Load(configHealthy, d)
		require.NoError(t, err)
		sets = append(sets, roundTripCase{name: "fixture " + filepath.Base(d), objs: objs, sel: readSelection(t, filepath.Join(d, "flags"))})
	}
	variants, err := filepath.Glob(filepath.Join("..", "..", "testdata", "corpus", "*", "variants", "*.yaml"))
	require.NoError(t, err)
	for _, v := range variants {
		caseDir := filepath.Dir(filepath.Dir(v))
		objs, err := fixture.Load(filepath.Join(caseDir, "objects.yaml"), v)
		require.NoError(t, err)
		sets = append(sets, roundTripCase{name: "corpus " + filepath.Base(caseDir) + " variant " + filepath.Base(v), objs: objs, sel: kube.Selection{AllNamespaces: true}})
	}
	for _, c := range roundTripCases(t) {
		if strings.HasPrefix(c.name, "corpus ") {
			sets = append(sets, c)
		}
	}
	for _, c := range sets {
		t.Run(c.name, func(t *testing.T) {
			caseName := strings.Fields(strings.TrimPrefix(c.name, "corpus "))[0]
			if why, gap := corefiletest.ModelGaps[caseName]; gap && strings.HasPrefix(c.name, "corpus ") {
				t.Skipf("a known gap of the model (internal/corefiletest ModelGaps): %s", why)
			}
			instances, setup := instancesOf(t, c.objs, c.sel)
			zone, host := zoneOf(setup)
			for _, in := range instances {
				differ(t, bin, in.Name, in.Files, in.Conf, zone, host)
			}
		})
	}
}

// TestEveryCorefileFixIsAcceptedByTheRealCoreDNS: after the fixes of LA101, LA104 and LA105
// (each applied as printed), the real CoreDNS starts and answers as the model says; where LA104
// then passes after LA101's or LA104's fixes, it answers A for the zone with the DNS Service's
// IPv4 externalIPs, AAAA with NODATA or its IPv6 ones, and forwards a name outside.
func TestEveryCorefileFixIsAcceptedByTheRealCoreDNS(t *testing.T) {
	bin := realCoreDNS(t)
	runs := 0
	for _, c := range roundTripCases(t) {
		if _, err := discoverObjects(t, c.objs, c.sel); err != nil {
			continue
		}
		for _, id := range []string{"LA101", "LA104", "LA105"} {
			r, ok := fixAll(t, c, id)
			require.True(t, ok)
			if len(r.applied) == 0 || !strings.Contains(strings.Join(r.applied, "\n"), "patch configmap") {
				continue
			}
			t.Run(c.name+"/"+id, func(t *testing.T) {
				caseName := strings.Fields(strings.TrimPrefix(c.name, "corpus "))[0]
				if why, gap := corefiletest.ModelGaps[caseName]; gap && strings.HasPrefix(c.name, "corpus ") {
					t.Skipf("a known gap of the model (internal/corefiletest ModelGaps): %s", why)
				}
				env, err := discoverObjects(t, r.objs, c.sel)
				require.NoError(t, err)
				s := env.Setup
				zone, host := zoneOf(s)
				for _, in := range corefiletest.Instances(r.objs) {
					run := differ(t, bin, in.Name, in.Files, in.Conf, zone, host)
					runs++
					require.True(t, run.Starts, "CoreDNS refuses the fixed Corefile: %s\nfixes:\n%s", run.Error, strings.Join(r.applied, "\n"))
					// LA105's fixes add `health` and `ready`, which answer nothing: that the
					// CoreDNS still starts, and answers as the model says (differ), is their
					// proof; what the zone answers is LA101's and LA104's.
					if id == "LA105" || !corefileCheckPasses(t, env) || s.ConfigMap == nil || in.Conf != s.CorefileConf {
						continue
					}
					assertAnswersAsIntended(t, run, s)
				}
			})
		}
	}
	t.Logf("%d fixed Corefiles run in the real CoreDNS", runs)
	assert.Positive(t, runs)
}

func corefileCheckPasses(t *testing.T, env *Env) bool {
	t.Helper()
	st, _ := runConfigCheck(t, CorefileConfig(env))
	return st == "pass"
}

func assertAnswersAsIntended(t *testing.T, run corefiletest.Run, s *kube.Setup) {
	t.Helper()
	var v4, v6 []string
	for _, a := range kubeobj.ExternalAddrs(s.DNSService) {
		if a.Is4() {
			v4 = append(v4, a.String())
		} else {
			v6 = append(v6, a.String())
		}
	}
	port := s.ZonePort()
	label := "zz-differential-label." + s.Zone.FQDN()
	for _, pa := range run.Ports {
		if pa.Port != port {
			continue
		}
		for _, a := range pa.Answers {
			name, qt := a.NameType()
			got := answerAddrs(a.Answer)
			switch {
			case name == label && qt == dns.TypeA:
				assert.Equal(t, v4, got, "A %s", name)
			case name == label && qt == dns.TypeAAAA:
				if len(got) > 0 || len(v6) == 0 {
					assert.True(t, len(got) == 0 || slices.Equal(got, v6), "AAAA %s: %v", name, got)
				}
				assert.False(t, a.Forwarded, "AAAA of the zone is not forwarded")
			case name == "example.org." && qt == dns.TypeA:
				assert.True(t, a.Forwarded, "a name outside the zone is forwarded")
			}
		}
	}
}

func answerAddrs(records []string) []string {
	var out []string
	for _, r := range records {
		f := strings.Fields(r)
		if a, err := netip.ParseAddr(f[len(f)-1]); err == nil {
			out = append(out, a.String())
		}
	}
	slices.Sort(out)
	return out
}

// The reload plugin keeps one state for the whole process (plugin/reload/setup.go): `reload`
// in the "." block alone reloads an edit of the zone block too. Shown on the real binary: the
// zone's answer changes within two intervals with it, and stays without any reload.
func TestReloadInOneBlockReloadsEveryBlock(t *testing.T) {
	bin := realCoreDNS(t)
	corefileText := func(addr, reload string) string {
		return "apps.example.com:1053 {\n    template IN A {\n        answer \"{{ .Name }} 60 IN A " + addr + "\"\n    }\n    template ANY ANY {\n        rcode NOERROR\n    }\n}\n.:1053 {\n" + reload + "    forward . /etc/resolv.conf\n}\n"
	}
	for _, tt := range []struct {
		reload string
		want   string
	}{{"    reload 2s 0s\n", "10.0.10.12"}, {"", "10.0.10.11"}} {
		pod := corefile.NewFiles()
		pod.MountVolume("/etc/coredns", map[string]corefile.File{"Corefile": {Content: corefileText("10.0.10.11", tt.reload)}})
		cf, err := corefile.Load("reload", pod, "/etc/coredns/Corefile")
		require.NoError(t, err)
		require.Equal(t, tt.reload != "", cf.Reloads(), "the model says whether the process reloads")
		require.False(t, cf.Blocks[0].HasReload())
		var before, after []string
		run, err := corednsrun.RunCoreDNSThen(t.Context(), bin, corefiletest.Mounts(pod), "/etc/coredns/Corefile", "apps.example.com", nil, func(p *corednsrun.Process) {
			before = answerAddrs(p.Ask("1053", "x.apps.example.com", dns.TypeA).Answer)
			require.NoError(t, p.Write("/etc/coredns/Corefile", corefileText("10.0.10.12", tt.reload)))
			for range 12 { // bounded: 6 s, three intervals of 2 s
				time.Sleep(500 * time.Millisecond)
				if after = answerAddrs(p.Ask("1053", "x.apps.example.com", dns.TypeA).Answer); slices.Equal(after, []string{"10.0.10.12"}) {
					return
				}
			}
		})
		require.NoError(t, err)
		require.True(t, run.Starts, run.Error)
		assert.Equal(t, []string{"10.0.10.11"}, before)
		assert.Equal(t, []string{tt.want}, after, "reload %q", tt.reload)
	}
}
