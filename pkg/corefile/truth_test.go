package corefile_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/corefiletest"
	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
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
		t.Run(filepath.Base(dir), func(t *testing.T) {
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
					cf, err := in.Load()
					v := corefiletest.Compare(cf, err, run)
					checked += v.Checked
					unknown += len(v.Unknown)
					for _, w := range v.Wrong {
						t.Errorf("%s: %s", in.Workload, w)
					}
					for _, u := range v.Unknown {
						t.Logf("not predicted: %s", u)
						// Only answers from the cluster's data may stay unknown.
						assert.Contains(t, u, "kubernetes plugin", "%s", u)
					}
				}
			}
			compare(t, []string{filepath.Join(dir, "objects.yaml")}, truth.Runs)
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
