//go:build lab

// GNU time is one of the packages lab/install-deps.sh installs, so this runs with the lab tests
// (`make test-lab` installs it first), never skipped.

package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The peak memory is the program's own, not the benchmark's: Go starts children with vfork,
// and the kernel would count the parent's resident size into the child's ru_maxrss.
func TestRunProcessMeasuresTheProgramNotTheParent(t *testing.T) {
	ballast := make([]byte, 256<<20) // make this process large
	for i := range ballast {
		ballast[i] = 1
	}
	s, err := RunProcess(t.Context(), 10*time.Second, "", nil, "/bin/true")
	require.NoError(t, err)
	assert.Equal(t, 0, s.Code)
	assert.Greater(t, s.MaxRSSKB, int64(0))
	assert.Less(t, s.MaxRSSKB, int64(64<<10), "a /bin/true is a few MB, not this test's 256 MB")
	assert.Equal(t, byte(1), ballast[len(ballast)-1])
}
