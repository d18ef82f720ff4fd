package corefile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/corefiletest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
)

// Each rule case says whether CoreDNS starts and with which error; the lab tests run the same
// cases through the real binary (corefiletest/differential_lab_test.go).
func TestTheModelKnowsEveryStartUpRule(t *testing.T) {
	for _, r := range corefiletest.Rules {
		t.Run(r.Name, func(t *testing.T) {
			c, err := corefile.Load("rules", r.PodFiles(), corefiletest.Conf)
			switch {
			case r.Stops == "":
				require.NoError(t, err)
				assert.True(t, c.Starts(), "%v", c.Problems)
			case err != nil:
				assert.Contains(t, err.Error(), r.Stops)
			default:
				require.False(t, c.Starts(), "CoreDNS stops with %q", r.Stops)
				assert.Contains(t, c.Problems[0].Message, r.Stops)
			}
		})
	}
}
