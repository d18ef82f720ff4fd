package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestColorFollowsTheFlagThenTheStandardVariables(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flag     string
		env      map[string]string
		terminal bool
		want     bool
	}{
		{"terminal", "auto", nil, true, true},
		{"pipe", "auto", nil, false, false},
		{"NO_COLOR set", "auto", map[string]string{"NO_COLOR": "1"}, true, false},
		{"NO_COLOR empty is unset (no-color.org)", "auto", map[string]string{"NO_COLOR": ""}, true, true},
		{"FORCE_COLOR on a pipe", "auto", map[string]string{"FORCE_COLOR": "1"}, false, true},
		{"FORCE_COLOR empty is unset (force-color.org)", "auto", map[string]string{"FORCE_COLOR": ""}, false, false},
		{"CLICOLOR_FORCE on a pipe", "auto", map[string]string{"CLICOLOR_FORCE": "1"}, false, true},
		{"CLICOLOR_FORCE=0 forces nothing", "auto", map[string]string{"CLICOLOR_FORCE": "0"}, false, false},
		{"CLICOLOR=0", "auto", map[string]string{"CLICOLOR": "0"}, true, false},
		{"TERM=dumb", "auto", map[string]string{"TERM": "dumb"}, true, false},
		{"NO_COLOR beats FORCE_COLOR", "auto", map[string]string{"NO_COLOR": "1", "FORCE_COLOR": "1"}, true, false},
		{"FORCE_COLOR beats TERM=dumb", "auto", map[string]string{"FORCE_COLOR": "1", "TERM": "dumb"}, false, true},
		{"--color never beats FORCE_COLOR", "never", map[string]string{"FORCE_COLOR": "1"}, true, false},
		{"--color always beats NO_COLOR", "always", map[string]string{"NO_COLOR": "1"}, false, true},
	} {
		getenv := func(k string) string { return tc.env[k] }
		assert.Equal(t, tc.want, colorWanted(tc.flag, getenv, tc.terminal), tc.name)
	}
}
