package netns

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSplitRuleRemovesTheQuotesIptablesPrints(t *testing.T) {
	line := `-A POSTROUTING -s 10.8.0.0/24 -o eth0 -m comment --comment "lab-pod:f453e386" -j MASQUERADE`
	assert.Equal(t, []string{"-A", "POSTROUTING", "-s", "10.8.0.0/24", "-o", "eth0", "-m", "comment",
		"--comment", "lab-pod:f453e386", "-j", "MASQUERADE"}, SplitRule(line))
	assert.Equal(t, []string{"--comment", "a b", "-j", "X"}, SplitRule(`--comment "a b" -j X`))
	assert.Equal(t, []string{"--comment", ""}, SplitRule(`--comment ""`))
}
