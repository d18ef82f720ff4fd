package roundtrip

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const healthy = "../../testdata/fixtures/healthy"

func TestApplyRunsAPatchAsKubectlWould(t *testing.T) {
	c := WithOverlay(t, "", healthy)
	c.Apply(t, `kubectl -n lan-dns patch deployment lan-dns --type=merge -p '{"spec":{"replicas":3}}'`)
	d, err := c.CS.AppsV1().Deployments("lan-dns").Get(t.Context(), "lan-dns", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), *d.Spec.Replicas)
}

func TestWhatTheRoundTripDoesNotUnderstandIsAnError(t *testing.T) {
	c := WithOverlay(t, "", healthy)
	assert.Error(t, c.kubectl(t.Context(), []string{"kubectl", "scale", "deployment", "lan-dns"}, ""))
	assert.Error(t, c.kubectl(t.Context(), []string{"helm", "upgrade"}, ""))
	assert.Error(t, c.kubectl(t.Context(), []string{"kubectl", "patch", "widget", "x", "-p", "{}"}, ""))
}

func TestAlternativesSplitAtTheOrLines(t *testing.T) {
	assert.Equal(t, []string{"kubectl a\n# why", "# or: the other way\nkubectl b"}, Alternatives("kubectl a\n# why\n# or: the other way\nkubectl b"))
	assert.Equal(t, []string{"kubectl a"}, Alternatives("kubectl a"))
}
