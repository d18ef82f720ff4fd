package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/internal/roundtrip"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

// Round trips of the configuration checks: a printed fix is applied to the fake API the checks
// read (package internal/roundtrip), the cluster discovered again, and the check run on it.

// cluster is the round trip's fake API (internal/roundtrip), discovered into a config Env.
type cluster struct{ roundtrip.Cluster }

func newCluster(t *testing.T, objs []runtime.Object) cluster {
	t.Helper()
	return cluster{roundtrip.New(t, objs)}
}

// env discovers the cluster as doctor would.
func (c cluster) env(t *testing.T, sel kube.Selection) *Env {
	t.Helper()
	return &Env{Setup: c.Discover(t, sel), Access: kube.NewAccessReviewer(clientgo.Wrap(c.CS)), HelperNamespace: "default", NoHelpers: true}
}

const corpusDir = "../../testdata/corpus"

// corpusObjects loads a corpus case's objects.
func corpusObjects(t *testing.T, name string) []runtime.Object {
	t.Helper()
	objs, err := fixture.Load(corpusDir + "/" + name + "/objects.yaml")
	require.NoError(t, err)
	return objs
}

// roundTrip runs the check made by build on objs (discovered with sel), expects it to end with
// status before, applies the remediation of every finding that is not information, and
// expects the check to pass on what the API then holds. It returns the remediations applied.
func roundTrip(t *testing.T, objs []runtime.Object, sel kube.Selection, build func(*Env) engine.Check, before engine.Status) []string {
	t.Helper()
	return roundTrips(t, objs, sel, build, before, 1)
}

// roundTrips is roundTrip where a fix may bring the next finding to light (the interceptor
// that keeps an address of its own is then a user of externalIPs the policy must allow): up to
// rounds rounds of fixes until the check passes.
func roundTrips(t *testing.T, objs []runtime.Object, sel kube.Selection, build func(*Env) engine.Check, before engine.Status, rounds int) []string {
	t.Helper()
	c := newCluster(t, objs)
	st, o := runConfigCheck(t, build(c.env(t, sel)))
	require.Equal(t, before, st, "before: %+v", o.Findings)
	var applied []string
	for round := 0; round < rounds && st != engine.StatusPass; round++ {
		for _, f := range o.Findings {
			if f.Severity == engine.SeverityInfo {
				continue
			}
			require.NotEmpty(t, f.Remediation, "%s has no remediation to apply", f.Code)
			fix := roundtrip.Alternatives(f.Remediation)[0]
			c.Apply(t, fix)
			applied = append(applied, fix)
		}
		st, o = runConfigCheck(t, build(c.env(t, sel)))
	}
	require.Equal(t, engine.StatusPass, st, "after applying:\n%s\nfindings: %+v", strings.Join(applied, "\n"), o.Findings)
	return applied
}
