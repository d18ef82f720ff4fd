package corefile_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/corefiletest"
	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
)

const corpusDir = "../../testdata/corpus"

// Every case of the corpus (and every variant) records what the real CoreDNS v1.14.7 did with
// its Corefile (coredns.yaml, written by the corpus harness from the binary): whether it
// starts, and its answers to A and AAAA of the zone's names, a name outside and a cluster
// name. The model must predict each one or say it cannot; a wrong prediction fails.
func TestTheModelPredictsWhatCoreDNSDidWithEveryCorpusCase(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(corpusDir, "*", "coredns.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	checked, unknown := 0, 0
	for _, truthFile := range dirs {
		dir := filepath.Dir(truthFile)
		name := filepath.Base(dir)
		gap, gaps := corefiletest.ModelGaps[name], 0
		t.Run(name, func(t *testing.T) {
			truth, err := corefiletest.ReadTruth(truthFile)
			require.NoError(t, err)
			compare := func(t *testing.T, objs []string, runs []corefiletest.Run) {
				t.Helper()
				loaded, err := fixture.Load(objs...)
				require.NoError(t, err)
				instances := corefiletest.Instances(loaded)
				require.Len(t, instances, len(runs), "one CoreDNS workload per run")
				for i, run := range runs {
					in := instances[i]
					require.Equal(t, run.Workload, in.Workload)
					// the truth is the v1.14.7 binary's, whatever image the pods run: judge as it
					in.Files.Build = corefile.ReadBuild("registry.k8s.io/coredns/coredns:v1.14.7")
					cf, err := in.Load()
					v := corefiletest.Compare(cf, err, run)
					checked += v.Checked
					unknown += len(v.Unknown)
					gaps += judgePredictions(t, in.Workload, v, gap)
				}
			}
			compare(t, []string{filepath.Join(dir, "objects.yaml")}, truth.Runs)
			if gap != "" {
				assert.Positive(t, gaps, "%s is predicted now (%s): remove it from corefiletest.ModelGaps", name, gap)
			}
			for _, v := range truth.Variants {
				t.Run(v.Name, func(t *testing.T) {
					compare(t, []string{filepath.Join(dir, "objects.yaml"), filepath.Join(dir, "variants", v.Name+".yaml")}, v.Runs)
				})
			}
		})
	}
	t.Logf("%d predictions compared with CoreDNS, %d left unknown", checked, unknown)
	assert.Positive(t, checked)
}

// judgePredictions fails on a wrong prediction, and on an unknown one that is not the kubernetes
// plugin's data; for a case of modelGaps (gap is its reason) it logs them and returns how many.
func judgePredictions(t *testing.T, workload string, v corefiletest.Verdict, gap string) int {
	t.Helper()
	gaps := 0
	for _, w := range v.Wrong {
		if gap != "" {
			gaps++
			t.Logf("model gap (%s): %s: %s", gap, workload, w)
			continue
		}
		t.Errorf("%s: %s", workload, w)
	}
	for _, u := range v.Unknown {
		t.Logf("not predicted: %s", u)
		if gap != "" && !strings.Contains(u, "kubernetes plugin") {
			gaps++
			continue
		}
		// Only answers from the cluster's data may stay unknown.
		assert.Contains(t, u, "kubernetes plugin", "%s", u)
	}
	return gaps
}
