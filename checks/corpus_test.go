package checks_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/checks"
	"github.com/lanaccess/kubectl-lanaccess/checks/config"
	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// The corpus (testdata/corpus, see its README) holds real-world configurations rendered from the
// public charts and manifests people deploy, each with the true verdict of every configuration
// check, established from how Kubernetes, CoreDNS and Traefik behave (each cites its source) and,
// for CoreDNS, from the real binary. doctor is judged against it: discovery must find the setup
// the case describes, and every configuration check must give the true status.

const corpusDir = "../testdata/corpus"

type corpusExpect struct {
	Setup struct {
		Proxy     string `json:"proxy"`
		DNS       string `json:"dns"`
		Corefile  string `json:"corefile"`
		Zone      string `json:"zone"`
		ProbeHost string `json:"probe_host"`
	} `json:"setup"`
	Checks map[string]struct {
		Status string `json:"status"`
		Why    string `json:"why"`
		Trap   string `json:"trap"`
	} `json:"checks"`
}

// knownWrong are the verdicts doctor still gets wrong, by "case/check" (or "case/discovery"),
// each with the reason. The test fails when one of them turns right, so that the list only
// shrinks: an entry is removed in the commit that fixes it.
var knownWrong = map[string]string{}

func corpusCases(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(corpusDir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(corpusDir, e.Name(), "expect.yaml")); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	sort.Strings(out)
	require.NotEmpty(t, out)
	return out
}

func readCorpusExpect(t *testing.T, name string) corpusExpect {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(corpusDir, name, "expect.yaml"))
	require.NoError(t, err)
	var e corpusExpect
	require.NoError(t, yaml.Unmarshal(raw, &e), name)
	return e
}

// statusMatches: cannot-tell means the API does not show the answer: WARN or SKIP saying so,
// never PASS or FAIL.
func statusMatches(want string, got engine.Status) bool {
	if want == "cannot-tell" {
		return got == engine.StatusWarn || got == engine.StatusSkip
	}
	return string(got) == want
}

// corpusVerdicts discovers a case and runs the configuration checks: the verdict of each, or of
// "discovery" when it refused the setup.
func corpusVerdicts(t *testing.T, name string) (map[string]engine.Result, *kube.Setup, error) {
	t.Helper()
	objs, err := fixture.Load(filepath.Join(corpusDir, name, "objects.yaml"))
	require.NoError(t, err)
	cs, dc, err := fixture.Clients(objs)
	require.NoError(t, err)
	fixture.ReactAccess(cs, func(authorizationv1.ResourceAttributes) bool { return true })
	setup, err := kube.Discover(t.Context(), clientgo.Wrap(cs), dc, kube.Selection{AllNamespaces: true})
	if err != nil {
		return nil, nil, err
	}
	env := checks.DoctorEnv{Config: &config.Env{Setup: setup, Access: kube.NewAccessReviewer(clientgo.Wrap(cs)), HelperNamespace: "default", NoHelpers: true}}
	r := &engine.Runner{Checks: checks.Doctor(env)}
	out := map[string]engine.Result{}
	for _, res := range r.Run(t.Context()) {
		out[res.ID] = res
	}
	return out, setup, nil
}

func TestDoctorAgreesWithTheCorpus(t *testing.T) {
	stillWrong := map[string]bool{}
	agreed, total := 0, 0
	for _, name := range corpusCases(t) {
		want := readCorpusExpect(t, name)
		t.Run(name, func(t *testing.T) {
			results, setup, err := corpusVerdicts(t, name)
			key := name + "/discovery"
			discoveryRight := err == nil && setupMatches(want, setup)
			if why, known := knownWrong[key]; known {
				assert.False(t, discoveryRight, "%s is right now (%s): remove it from knownWrong", key, why)
				stillWrong[key] = true
			} else if assert.NoError(t, err, "discovery refused the setup") {
				assert.True(t, discoveryRight, "discovery found %s; the setup is %+v", describeFound(setup), want.Setup)
			}
			if err != nil {
				return
			}
			for id, w := range want.Checks {
				total++
				res, ok := results[id]
				require.True(t, ok, "%s did not run", id)
				right := statusMatches(w.Status, res.Status)
				key := name + "/" + id
				if why, known := knownWrong[key]; known {
					assert.False(t, right, "%s is right now (%s): remove it from knownWrong", key, why)
					stillWrong[key] = true
					continue
				}
				if right {
					agreed++
				}
				assert.True(t, right, "%s: %s, the truth is %s (%s); findings: %s", id, res.Status, w.Status, w.Why, findingsText(res))
			}
		})
	}
	for key := range knownWrong {
		assert.True(t, stillWrong[key], "knownWrong lists %s, which is no longer a case or a check", key)
	}
	t.Logf("corpus: %d cases, %d verdicts, %d agree, %d known disagreements", len(corpusCases(t)), total, agreed, len(knownWrong))
}

func setupMatches(want corpusExpect, s *kube.Setup) bool {
	ref := func(ns, name string) string { return ns + "/" + name }
	ok := s.ProxyService != nil && ref(s.ProxyService.Namespace, s.ProxyService.Name) == want.Setup.Proxy &&
		s.DNSService != nil && ref(s.DNSService.Namespace, s.DNSService.Name) == want.Setup.DNS &&
		s.Zone.String() == want.Setup.Zone &&
		s.ProbeHost.Name == want.Setup.ProbeHost
	if want.Setup.Corefile != "" {
		ok = ok && s.ConfigMap != nil && strings.HasPrefix(want.Setup.Corefile, kubeobj.ConfigMapRef(s.ConfigMap)+" key "+s.CorefileKey)
	}
	return ok
}

func describeFound(s *kube.Setup) string {
	if s == nil {
		return "nothing"
	}
	var parts []string
	if s.ProxyService != nil {
		parts = append(parts, "proxy "+kubeobj.ServiceRef(s.ProxyService))
	}
	if s.DNSService != nil {
		parts = append(parts, "dns "+kubeobj.ServiceRef(s.DNSService))
	}
	if s.ConfigMap != nil {
		parts = append(parts, kubeobj.ConfigMapRef(s.ConfigMap)+" key "+s.CorefileKey)
	}
	parts = append(parts, "zone "+s.Zone.FQDN(), "probe host "+s.ProbeHost.Name)
	return strings.Join(parts, ", ")
}

func findingsText(res engine.Result) string {
	var b strings.Builder
	for _, f := range res.Findings {
		if f.Severity == engine.SeverityInfo {
			continue
		}
		b.WriteString("\n  " + string(f.Severity) + " " + f.Code + " " + f.Object + ": " + f.Message)
	}
	if res.Reason != "" {
		b.WriteString("\n  reason: " + res.Reason)
	}
	return b.String()
}
