package config

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/internal/corefiletest"
	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

// Every fix LA101, LA104 and LA105 print is applied here, as printed, to the objects of the
// fixture or corpus case (the kubectl commands read with a shell parser), the setup is
// discovered again and the check run again, until no printed fix applies: each fix must make
// its finding go away, and a case whose findings all have fixes must end with the check
// passing. The lab tests load every Corefile these fixes write into the real CoreDNS.

// roundTripCase is one set of objects to fix.
type roundTripCase struct {
	name string
	objs []runtime.Object
	sel  kube.Selection
}

func roundTripCases(t *testing.T) []roundTripCase {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(configBroken, "la10[145]-*"))
	require.NoError(t, err)
	cases, err := filepath.Glob(filepath.Join("..", "..", "testdata", "corpus", "*", "objects.yaml"))
	require.NoError(t, err)
	out := make([]roundTripCase, 0, len(dirs)+len(cases))
	for _, d := range dirs {
		objs, err := fixture.Load(configHealthy, d)
		require.NoError(t, err)
		out = append(out, roundTripCase{name: "fixture " + filepath.Base(d), objs: objs, sel: readSelection(t, filepath.Join(d, "flags"))})
	}
	for _, c := range cases {
		objs, err := fixture.Load(c)
		require.NoError(t, err)
		out = append(out, roundTripCase{name: "corpus " + filepath.Base(filepath.Dir(c)), objs: objs, sel: kube.Selection{AllNamespaces: true}})
	}
	return out
}

// discoverObjects is doctor's discovery on objs, every permission granted.
func discoverObjects(t *testing.T, objs []runtime.Object, sel kube.Selection) (*Env, error) {
	t.Helper()
	cs, dc, err := fixture.Clients(objs)
	require.NoError(t, err)
	fixture.ReactAccess(cs, func(authorizationv1.ResourceAttributes) bool { return true })
	setup, err := kube.Discover(t.Context(), clientgo.Wrap(cs), dc, sel)
	if err != nil {
		return nil, err
	}
	return &Env{Setup: setup, Access: kube.NewAccessReviewer(clientgo.Wrap(cs)), HelperNamespace: "default"}, nil
}

// fixed is the end of a round trip.
type fixed struct {
	objs    []runtime.Object
	applied []string
	// snapshots are the objects after each applied fix.
	snapshots [][]runtime.Object
	status    engine.Status
	outcome   engine.Outcome
}

// fixAll applies, one at a time, the first printed fix of check id that applies, until none does.
func fixAll(t *testing.T, c roundTripCase, id string) (fixed, bool) {
	t.Helper()
	objs := c.objs
	var out fixed
	for range 12 {
		env, err := discoverObjects(t, objs, c.sel)
		if err != nil {
			return out, false // discovery refuses the case: the corpus test says so
		}
		var ch engine.Check
		for _, x := range Checks(env) {
			if x.ID == id {
				ch = x
			}
		}
		out.status, out.outcome = runConfigCheck(t, ch)
		progressed := false
		for _, f := range out.outcome.Findings {
			if f.Severity == engine.SeverityInfo || f.Remediation == "" {
				continue
			}
			next, applied, err := corefiletest.ApplyRemediation(cloneObjects(objs), f.Remediation)
			require.NoError(t, err, "%s: the fix of %s does not apply:\n%s", c.name, f.Code, f.Remediation)
			if len(applied) == 0 {
				continue
			}
			require.False(t, slices.Contains(out.applied, f.Remediation), "%s: the fix of %s was applied and the finding is still there:\n%s", c.name, f.Code, f.Remediation)
			out.applied = append(out.applied, f.Remediation)
			objs = next
			out.snapshots = append(out.snapshots, next)
			progressed = true
			break
		}
		if !progressed {
			out.objs = objs
			return out, true
		}
	}
	t.Fatalf("%s: %s still has fixes to apply after 12 rounds", c.name, id)
	return out, false
}

func cloneObjects(objs []runtime.Object) []runtime.Object {
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopyObject()
	}
	return out
}

// observedState are findings about what the pods do now, not about the spec.
var observedState = map[string]bool{"LA105-PODS-NOT-READY": true, "LA105-SAME-NODE": true}

// unfixable are findings whose fix cannot be applied by a test: said so in their text.
func unfixable(o engine.Outcome) []string {
	var out []string
	for _, f := range o.Findings {
		if f.Severity != engine.SeverityInfo {
			out = append(out, f.Code+": "+f.Message)
		}
	}
	return out
}

func TestEveryPrintedFixOfLA101LA104LA105RoundTrips(t *testing.T) {
	applied := 0
	for _, c := range roundTripCases(t) {
		if _, err := discoverObjects(t, c.objs, c.sel); err != nil {
			t.Logf("%s: discovery refuses it (checks/corpus_test.go lists it): %v", c.name, err)
			continue
		}
		for _, id := range []string{"LA101", "LA104", "LA105"} {
			t.Run(c.name+"/"+id, func(t *testing.T) {
				r, ok := fixAll(t, c, id)
				require.True(t, ok)
				applied += len(r.applied)
				if len(r.applied) == 0 {
					return
				}
				// After the fixes, what remains has no fix a test can apply.
				for _, f := range r.outcome.Findings {
					if f.Severity == engine.SeverityInfo || f.Remediation == "" {
						continue
					}
					_, did, err := corefiletest.ApplyRemediation(cloneObjects(r.objs), f.Remediation)
					assert.NoError(t, err)
					assert.Empty(t, did, "%s is left with a fix that applies", f.Code)
				}
				// What remains is observed state the fixes change only when pods restart (the
				// fixtures' pod statuses do not), or a fix that says it cannot be proven.
				for _, f := range r.outcome.Findings {
					if f.Severity == engine.SeverityInfo || observedState[f.Code] {
						continue
					}
					assert.Contains(t, f.Remediation, "cannot be proven", "%s: %s is left after the fixes", f.Code, f.Message)
				}
				t.Logf("%d fixes applied; status %s; left: %v", len(r.applied), r.status, unfixable(r.outcome))
			})
		}
	}
	t.Logf("%d fixes applied and checked again", applied)
	assert.Positive(t, applied)
}
