package config

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

const (
	configHealthy = "../../testdata/fixtures/healthy"
	configBroken  = "../../testdata/fixtures/broken"
)

// configCatalogue is the configuration half of doctor, in catalogue order.
func configCatalogue(env *Env) []engine.Check { return Checks(env) }

// fakeClients keeps the clientset behind each test Env (for counting and reactors).
var (
	fakeClientsMu sync.Mutex
	fakeClients   = map[*Env]*fake.Clientset{}
)

func fakeClient(env *Env) *fake.Clientset {
	fakeClientsMu.Lock()
	defer fakeClientsMu.Unlock()
	return fakeClients[env]
}

// configEnv discovers the healthy fixtures with the overlays in dirs, every permission
// granted unless allow says otherwise, and mutate applied to the objects first.
func configEnv(t *testing.T, allow func(authorizationv1.ResourceAttributes) bool, mutate func([]runtime.Object) []runtime.Object, dirs ...string) *Env {
	t.Helper()
	return configEnvWith(t, kube.Selection{}, allow, mutate, dirs...)
}

// configEnvWith is configEnv with the objects named as on the command line.
func configEnvWith(t *testing.T, sel kube.Selection, allow func(authorizationv1.ResourceAttributes) bool, mutate func([]runtime.Object) []runtime.Object, dirs ...string) *Env {
	t.Helper()
	objs, err := fixture.Load(append([]string{configHealthy}, dirs...)...)
	require.NoError(t, err)
	if mutate != nil {
		objs = mutate(objs)
	}
	cs, dc, err := fixture.Clients(objs)
	require.NoError(t, err)
	if allow == nil {
		allow = func(authorizationv1.ResourceAttributes) bool { return true }
	}
	fixture.ReactAccess(cs, allow)
	setup, err := kube.Discover(t.Context(), clientgo.Wrap(cs), dc, sel)
	require.NoError(t, err)
	env := &Env{Setup: setup, Access: kube.NewAccessReviewer(clientgo.Wrap(cs)), HelperNamespace: "default"}
	fakeClientsMu.Lock()
	fakeClients[env] = cs
	fakeClientsMu.Unlock()
	return env
}

func runConfigCheck(t *testing.T, c engine.Check) (engine.Status, engine.Outcome) {
	t.Helper()
	o := c.Run(t.Context())
	st, _ := engine.StatusOf(o)
	assert.Empty(t, catalogue.Undeclared(c.ID, o.Findings), "%s emits findings without a declared code", c.ID)
	return st, o
}

// configFindings returns the findings of severity sev about object ("" = any).
func configFindings(o engine.Outcome, sev engine.Severity, object string) []engine.Finding {
	var out []engine.Finding
	for _, f := range o.Findings {
		if f.Severity == sev && (object == "" || f.Object == object) {
			out = append(out, f)
		}
	}
	return out
}

func TestConfigurationChecksAllPassOnTheHealthyFixtures(t *testing.T) {
	env := configEnv(t, nil, nil)
	for _, c := range configCatalogue(env) {
		st, o := runConfigCheck(t, c)
		assert.Equal(t, engine.StatusPass, st, "%s: %+v", c.ID, o)
		for _, f := range o.Findings {
			assert.Equal(t, engine.SeverityInfo, f.Severity, "%s: %+v", c.ID, f)
		}
	}
}

// expectation is one line of a broken variant's `expect` file: "LA101 fail Service lan-dns/lan-dns".
type expectation struct {
	ID     string
	Status engine.Status
	Object string
}

func readExpectations(t *testing.T, path string) []expectation {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var out []expectation
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, " ", 3)
		require.Len(t, parts, 3, "%s: %q", path, line)
		out = append(out, expectation{ID: parts[0], Status: engine.Status(parts[1]), Object: parts[2]})
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, path)
	return out
}

// readSelection reads a variant's optional `flags` file: the doctor flags that name objects
// when discovery alone would be ambiguous ("--proxy-service traefik/traefik").
func readSelection(t *testing.T, path string) kube.Selection {
	t.Helper()
	var sel kube.Selection
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return sel
	}
	require.NoError(t, err)
	fields := strings.Fields(string(b))
	require.Zero(t, len(fields)%2, "%s: flags come in pairs", path)
	for i := 0; i < len(fields); i += 2 {
		v := fields[i+1]
		switch fields[i] {
		case "--proxy-service":
			sel.ProxyService = v
		case "--dns-service":
			sel.DNSService = v
		case "--configmap":
			sel.ConfigMap = v
		case "--zone":
			sel.Zone = zone.MustParse(v)
		case "-n", "--namespace":
			sel.Namespace = v
		default:
			t.Fatalf("%s: unknown flag %s", path, fields[i])
		}
	}
	return sel
}

var severityOf = map[engine.Status]engine.Severity{
	engine.StatusFail: engine.SeverityFail,
	engine.StatusWarn: engine.SeverityWarn,
	engine.StatusPass: engine.SeverityInfo,
}

// runBrokenVariants runs the variants under testdata/fixtures/broken whose directory starts
// with prefix ("la101-"). Each is an overlay of the healthy fixtures with an `expect` file
// naming the check, its status and the object of a finding, and an optional `flags` file.
func runBrokenVariants(t *testing.T, prefix string) {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(configBroken, prefix+"*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs, "no broken variant for %s", prefix)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			want := readExpectations(t, filepath.Join(dir, "expect"))
			env := configEnvWith(t, readSelection(t, filepath.Join(dir, "flags")), nil, nil, dir)
			byID := map[string]engine.Check{}
			for _, c := range configCatalogue(env) {
				byID[c.ID] = c
			}
			for _, w := range want {
				c, ok := byID[w.ID]
				require.True(t, ok, "unknown check %s", w.ID)
				st, o := runConfigCheck(t, c)
				assert.Equal(t, w.Status, st, "%s status; findings: %+v", w.ID, o.Findings)
				sev, ok := severityOf[w.Status]
				require.True(t, ok, "status %s", w.Status)
				found := configFindings(o, sev, w.Object)
				if assert.NotEmpty(t, found, "%s: no %s finding about %q; findings: %+v", w.ID, sev, w.Object, o.Findings) {
					for _, f := range found {
						assert.NotEmpty(t, f.Message)
						if sev != engine.SeverityInfo {
							assert.NotEmpty(t, f.Remediation, "%s: %s has no remediation", w.ID, f.Message)
						}
					}
				}
			}
		})
	}
}

func TestEveryBrokenVariantNamesItsCheckAndHasExpectations(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(configBroken, "*"))
	require.NoError(t, err)
	ids := map[string]bool{}
	for _, c := range configCatalogue(&Env{}) {
		ids[strings.ToLower(c.ID)] = true
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		id, _, _ := strings.Cut(name, "-")
		assert.True(t, ids[id], "%s does not start with a configuration check ID", name)
		for _, w := range readExpectations(t, filepath.Join(dir, "expect")) {
			assert.Equal(t, strings.ToUpper(id), w.ID, "%s expects a finding of another check first", name)
			break
		}
	}
}

// editObject returns a mutation that applies fn to the object of type T named ns/name.
func editObject[T runtime.Object](ns, name string, fn func(T)) func([]runtime.Object) []runtime.Object {
	return func(objs []runtime.Object) []runtime.Object {
		for _, o := range objs {
			t, ok := o.(T)
			if !ok {
				continue
			}
			m, err := meta.Accessor(o)
			if err == nil && m.GetNamespace() == ns && m.GetName() == name {
				fn(t)
			}
		}
		return objs
	}
}

// addObjects returns a mutation that adds objs.
func addObjects(extra ...runtime.Object) func([]runtime.Object) []runtime.Object {
	return func(objs []runtime.Object) []runtime.Object { return append(objs, extra...) }
}

// chain applies mutations in order.
func chain(ms ...func([]runtime.Object) []runtime.Object) func([]runtime.Object) []runtime.Object {
	return func(objs []runtime.Object) []runtime.Object {
		for _, m := range ms {
			objs = m(objs)
		}
		return objs
	}
}
