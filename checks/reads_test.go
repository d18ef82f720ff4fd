package checks

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
)

// What a check reads, as the source shows it, against what its catalogue entry declares
// (Entry.Reads). A read is named by a unit: "pods", "deployments.apps" (a read of the read-only
// grant, whatever the namespace), "exec:vpn" (exec into the VPN pods), "exec:node-read" (exec
// into the trusted system DaemonSets' pods), "configz" (the kubelet's configz through
// nodes/proxy), "helpers" (helper pods), "access-review" (SelfSubjectAccessReviews).
//
// A check's reads are found in its own files (laNNN_*.go, vpnNNN_*.go, wsNNN_*.go) and in every
// function of its package those reach (a call graph by name); vpn-trace's checks add what
// facts.Gather reads for the facts.Need flags they name. What is seen:
//   - kube.ReadKey and kube.ReadKeysIn with literal arguments (the "not read" notes);
//   - the fields of kube.Setup (setupFields: what discovery reads to fill each);
//   - the environment's seams: Access (access reviews), Reader and Shells (helper pods), Pods;
//   - client-go calls (CoreV1().Pods(...)), dynamic reads of the facts' custom resources, exec
//     into the VPN pods (Gatherer.exec), into the node readers (Gatherer.execIn) and configz.

// unit names a Read of an entry as the scan sees it.
func unit(r manifests.Read, resource string) string {
	switch {
	case r.Grant == manifests.GrantHelpers:
		return "helpers"
	case r.Grant == manifests.GrantNodeRead:
		return "exec:node-read"
	case r.Grant == manifests.GrantNodeConfigz:
		return "configz"
	case resource == "pods/exec":
		return "exec:vpn"
	case resource == "selfsubjectaccessreviews":
		return "access-review"
	case r.Group == "":
		return resource
	}
	return resource + "." + r.Group
}

// declaredUnits are the units an entry declares.
func declaredUnits(e catalogue.Entry) []string {
	var out []string
	for _, r := range e.Reads {
		for _, res := range r.Resources {
			if u := unit(r, res); !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	return out
}

var (
	routeUnits = []string{"ingresses.networking.k8s.io", "ingressclasses.networking.k8s.io", "ingressroutes.traefik.io",
		"middlewares.traefik.io", "ingressroutes.traefik.containo.us", "middlewares.traefik.containo.us", "httpproxies.projectcontour.io",
		"ingressroutetcps.traefik.io", "ingressrouteudps.traefik.io", "ingressroutetcps.traefik.containo.us", "ingressrouteudps.traefik.containo.us",
		"authorizationpolicies.security.istio.io",
		"gatewayclasses.gateway.networking.k8s.io", "gateways.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io",
		"referencegrants.gateway.networking.k8s.io"}
	// modelUnits fill the proxy's route model: the routes, the Traefik configuration of the
	// proxy's ConfigMaps and the namespaces its selectors match.
	modelUnits     = append([]string{"configmaps", "namespaces"}, routeUnits...)
	corefileUnits  = []string{"configmaps"}
	dataplaneUnits = []string{"daemonsets.apps", "pods", "configmaps", "installations.operator.tigera.io",
		"felixconfigurations.projectcalico.org", "felixconfigurations.crd.projectcalico.org"}
)

// setupFields maps each field of kube.Setup to what discovery reads to fill it (pkg/kube's
// discover*.go). A field missing here fails TestEveryReadOfACheckIsDeclared's completeness
// check, so a new field is classified before a check can use it unseen.
var setupFields = map[string][]string{
	"ProxyService": {"services"}, "DNSService": {"services"}, "Services": {"services"}, "Zone": {"services"},
	"ConfigMap": corefileUnits, "CorefileKey": corefileUnits, "CorefileMounts": {"configmaps", "pods"}, "CorefileConf": corefileUnits,
	"Corefile": corefileUnits, "CorefileErr": corefileUnits, "ZoneAnswers": corefileUnits,
	"DNSWorkload": {"deployments.apps"}, "ProxyWorkload": {"deployments.apps"},
	"DNSPods": {"pods"}, "ProxyPods": {"pods"}, "Nodes": {"nodes"},
	"EndpointSlices": {"endpointslices.discovery.k8s.io"}, "PDBs": {"poddisruptionbudgets.policy"},
	"Ingresses": routeUnits, "IngressRoutes": routeUnits, "IngressRouteStreams": routeUnits, "AuthorizationPolicies": routeUnits, "StreamRoutes": modelUnits, "HTTPProxies": routeUnits, "Middlewares": routeUnits,
	"IngressClasses": routeUnits, "GatewayClasses": routeUnits, "Gateways": routeUnits, "HTTPRoutes": routeUnits, "ReferenceGrants": routeUnits,
	"Model": modelUnits, "Routes": modelUnits, "ProbeHost": modelUnits, "Implementation": modelUnits, "Traefik": modelUnits,
	"Nginx": modelUnits, "MiddlewaresKnown": modelUnits, "AuthMiddleware": modelUnits, "ProxyConfigMaps": {"configmaps"},
	"ValidatingWebhooks":      {"validatingwebhookconfigurations.admissionregistration.k8s.io"},
	"AdmissionPolicies":       {"validatingadmissionpolicies.admissionregistration.k8s.io"},
	"AdmissionPolicyBindings": {"validatingadmissionpolicybindings.admissionregistration.k8s.io"},
	"KyvernoPolicies":         {"clusterpolicies.kyverno.io", "policies.kyverno.io"},
	"GatekeeperTemplates":     {"constrainttemplates.templates.gatekeeper.sh"},
	"GatekeeperConstraints":   {"k8sexternalips.constraints.gatekeeper.sh"},
	"KubeProxyConfig":         {"configmaps"}, "APIServer": {"pods"}, "Dataplane": dataplaneUnits,
	"ProxyReach": {"services", "pods", "nodes"}, "DNSReach": {"services", "pods", "nodes"}, "LBPods": {"pods"},
	"Namespaces": {"namespaces"}, "ProxyFacts": append([]string{"namespaces", "pods"}, routeUnits...),
	// What discovery knows of its own reads, not a read.
	"Installed": nil, "Partial": nil, "APIWarnings": nil, "ServerVersion": nil, "Scope": nil,
}

// clientGroups maps client-go's typed group accessors to API groups.
var clientGroups = map[string]string{"CoreV1": "", "AppsV1": "apps", "NetworkingV1": "networking.k8s.io",
	"DiscoveryV1": "discovery.k8s.io", "PolicyV1": "policy", "EventsV1": "events.k8s.io"}

// nodeShells are what a node shell takes (podexec.NodeShells): a trusted system DaemonSet's pod,
// confirmed by its controller, else a helper pod.
var nodeShells = []string{"helpers", "daemonsets.apps"}

// envSeams are the environment's fields that read (env.Access), callSeams the calls that do
// (g.exec(...)); the walk stops there.
var (
	envSeams  = map[string][]string{"Access": {"access-review"}, "Reader": nodeShells, "Shells": nodeShells, "Pods": {"pods"}}
	callSeams = map[string][]string{"exec": {"exec:vpn"}, "execIn": {"exec:node-read"}, "Configz": {"configz"}}
)

// pkgSource is one package's parsed files and its functions by name.
type pkgSource struct {
	fset  *token.FileSet
	files map[string]*ast.File
	funcs map[string][]*ast.FuncDecl
	// setup: the package's checks read kube.Setup (its fields are reads).
	setup bool
}

func parsePackage(t *testing.T, dir string, setup bool) *pkgSource {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	p := &pkgSource{fset: token.NewFileSet(), files: map[string]*ast.File{}, funcs: map[string][]*ast.FuncDecl{}, setup: setup}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(p.fset, path, nil, 0)
		require.NoError(t, err)
		p.files[filepath.Base(path)] = f
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				p.funcs[fd.Name.Name] = append(p.funcs[fd.Name.Name], fd)
			}
		}
	}
	require.NotEmpty(t, p.files, dir)
	return p
}

// ofOtherCheck tells whether fd is declared in the files of a check other than the one whose
// files are roots: a check's own reads are what its files and the shared files reach.
func (p *pkgSource) ofOtherCheck(fd *ast.FuncDecl, roots []ast.Node) bool {
	name := filepath.Base(p.fset.Position(fd.Pos()).Filename)
	m := checkFile.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	for _, r := range roots {
		if f, ok := r.(*ast.File); ok && strings.HasPrefix(filepath.Base(p.fset.Position(f.Pos()).Filename), m[0]) {
			return false
		}
	}
	return true
}

// reads is what the scan found: unit -> where.
type reads map[string]string

func (r reads) add(u, at string) {
	if _, ok := r[u]; !ok {
		r[u] = at
	}
}

func (r reads) addAll(us []string, at string) {
	for _, u := range us {
		r.add(u, at)
	}
}

// walk collects the reads of the nodes and of every function of the package they reach. skip
// prunes a subtree (facts.Gather's branches of needs a check does not name).
func (p *pkgSource) walk(roots []ast.Node, skip func(ast.Node) bool) reads {
	w := &walker{p: p, out: reads{}, seen: map[*ast.FuncDecl]bool{}, roots: roots}
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		ast.Inspect(n, func(n ast.Node) bool {
			if n == nil || (skip != nil && skip(n)) {
				return false
			}
			next, descend := w.visit(n)
			queue = append(queue, next...)
			return descend
		})
	}
	return w.out
}

// walker is one walk's state: what it found and the functions it already queued.
type walker struct {
	p     *pkgSource
	out   reads
	seen  map[*ast.FuncDecl]bool
	roots []ast.Node
}

// visit adds what n reads, and returns the functions n names that are still to walk and
// whether to look inside n.
func (w *walker) visit(n ast.Node) ([]ast.Node, bool) {
	at := w.p.fset.Position(n.Pos()).String()
	switch v := n.(type) {
	case *ast.CallExpr:
		if sel, ok := v.Fun.(*ast.SelectorExpr); ok && callSeams[sel.Sel.Name] != nil {
			w.out.addAll(callSeams[sel.Sel.Name], at)
			return nil, false
		}
		callReads(v, at, w.out)
	case *ast.SelectorExpr:
		if x, ok := v.X.(*ast.Ident); ok && x.Name == "env" && envSeams[v.Sel.Name] != nil {
			w.out.addAll(envSeams[v.Sel.Name], at)
			return nil, false
		}
		if w.p.setup {
			w.out.addAll(setupFields[v.Sel.Name], at)
		}
	case *ast.Ident:
		var next []ast.Node
		for _, fd := range w.p.funcs[v.Name] {
			if !w.seen[fd] && !w.p.ofOtherCheck(fd, w.roots) {
				w.seen[fd] = true
				next = append(next, fd)
			}
		}
		return next, true
	}
	return nil, true
}

// callReads adds what one call reads: kube.ReadKey/ReadKeysIn with literals, client-go typed
// calls (X.CoreV1().Pods(ns)), dynamic reads of the facts' custom resources.
func callReads(call *ast.CallExpr, at string, out reads) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	switch sel.Sel.Name {
	case "ReadKey":
		g, gok := stringLit(call, 0)
		r, rok := stringLit(call, 1)
		if gok && rok {
			out.add(strings.TrimSuffix(r+"."+g, "."), at)
		}
		return
	case "ReadKeysIn":
		for i := 1; i < len(call.Args); i++ {
			if v, ok := stringLit(call, i); ok {
				out.add(v, at)
			}
		}
		return
	case "Resource":
		var arg string
		if len(call.Args) == 1 {
			switch a := call.Args[0].(type) {
			case *ast.Ident:
				arg = a.Name
			case *ast.SelectorExpr:
				arg = a.Sel.Name
			}
		}
		switch arg {
		case "InstallationGVR":
			out.add("installations.operator.tigera.io", at)
		case "gvr": // cniPolicyKinds' entries
			for _, gvr := range facts.CNIPolicyResources() {
				out.add(gvr.Resource+"."+gvr.Group, at)
			}
		}
		return
	case "Of":
		if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "trust" {
			out.add("daemonsets.apps", at) // a node reader's controller (podexec.ReaderTrust)
		}
		return
	}
	inner, ok := sel.X.(*ast.CallExpr)
	if !ok {
		return
	}
	if g, ok := inner.Fun.(*ast.SelectorExpr); ok {
		if group, known := clientGroups[g.Sel.Name]; known && sel.Sel.Name != "RESTClient" {
			out.add(strings.TrimSuffix(strings.ToLower(sel.Sel.Name)+"."+group, "."), at)
		}
	}
}

// stringLit is the call's i-th argument when it is a string literal.
func stringLit(call *ast.CallExpr, i int) (string, bool) {
	if i >= len(call.Args) {
		return "", false
	}
	b, ok := call.Args[i].(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

var checkFile = regexp.MustCompile(`^(la|vpn|ws)([0-9]{3})_`)

// needsIn names the facts.Need flags a set of nodes mentions.
func needsIn(nodes ...ast.Node) []string {
	var out []string
	for _, n := range nodes {
		ast.Inspect(n, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && strings.HasPrefix(id.Name, "Need") && id.Name != "Need" && !slices.Contains(out, id.Name) {
				out = append(out, id.Name)
			}
			return true
		})
	}
	return out
}

// gathered is what facts.Gather reads for needs: Gather and podFacts, without the branches
// guarded by needs the check does not name (`if needs.Has(NeedX)`, `if needs&(A|B) != 0`), and
// every function the rest reaches.
func gathered(f *pkgSource, needs []string) reads {
	roots := make([]ast.Node, 0, 2)
	for _, name := range []string{"Gather", "podFacts"} {
		if len(f.funcs[name]) != 1 {
			panic("facts." + name + " is not one function: the scan of vpn-trace's reads needs it")
		}
		roots = append(roots, f.funcs[name][0].Body)
	}
	skip := func(n ast.Node) bool {
		ifs, ok := n.(*ast.IfStmt)
		if !ok {
			return false
		}
		guard := needsIn(ifs.Cond)
		return len(guard) > 0 && !slices.ContainsFunc(guard, func(g string) bool { return slices.Contains(needs, g) })
	}
	return f.walk(roots, skip)
}

// scanned is what every check of the families reads, by check ID.
func scanned(t *testing.T) map[string]reads {
	t.Helper()
	families := map[string]bool{"config": true, "nodes": true, "netpath": false, "vpn": false, "workstation": false}
	factsPkg := parsePackage(t, filepath.Join("vpn", "facts"), false)
	out := map[string]reads{}
	for dir, setup := range families {
		p := parsePackage(t, dir, setup)
		byID := map[string][]ast.Node{}
		for name, f := range p.files {
			if m := checkFile.FindStringSubmatch(name); m != nil {
				id := strings.ToUpper(m[1]) + m[2]
				byID[id] = append(byID[id], f)
			}
		}
		for id, files := range byID {
			r := p.walk(files, nil)
			if dir == "vpn" {
				for u, at := range gathered(factsPkg, needsIn(files...)) {
					r.add(u, at)
				}
			}
			out[id] = r
		}
	}
	return out
}

// allowed is what check e may read: its own declarations, those of the checks it depends on
// (it is skipped when they could not run) and its command's start (discovery).
func allowed(e catalogue.Entry) []string {
	out := declaredUnits(e)
	out = append(out, declaredUnits(catalogue.NotStarted(e.Command))...)
	for _, dep := range e.DependsOn {
		out = append(out, allowed(catalogue.Get(dep))...)
	}
	return out
}

// undeclared lists what a check reads and its entry does not allow, as "unit (at)".
func undeclared(e catalogue.Entry, found reads) []string {
	ok := allowed(e)
	var out []string
	for u, at := range found {
		if !slices.Contains(ok, u) {
			out = append(out, u+" ("+at+")")
		}
	}
	sort.Strings(out)
	return out
}

// unused lists what an entry declares and its check never reads.
func unused(e catalogue.Entry, found reads) []string {
	var out []string
	for _, u := range declaredUnits(e) {
		if _, ok := found[u]; !ok {
			out = append(out, u)
		}
	}
	return out
}

func TestEveryReadOfACheckIsDeclared(t *testing.T) {
	found := scanned(t)
	require.Len(t, found, len(catalogue.All()), "every check of the catalogue has its files")
	for _, e := range catalogue.All() {
		require.Contains(t, found, e.ID)
		assert.Empty(t, undeclared(e, found[e.ID]), "%s reads what its catalogue entry (checks/catalogue) does not declare", e.ID)
	}
}

func TestEveryDeclaredReadIsRead(t *testing.T) {
	found := scanned(t)
	for _, e := range catalogue.All() {
		assert.Empty(t, unused(e, found[e.ID]), "%s declares reads its source never makes", e.ID)
	}
}

// The scan is not vacuous: a declaration taken away or added is caught.
func TestTheScanCatchesAMissingAndAnExtraDeclaration(t *testing.T) {
	found := scanned(t)
	e := catalogue.Get("LA102")
	require.Empty(t, undeclared(e, found["LA102"]))
	without := e
	without.Reads = slices.DeleteFunc(slices.Clone(e.Reads), func(r manifests.Read) bool { return r.Group == "discovery.k8s.io" })
	assert.Equal(t, []string{"endpointslices.discovery.k8s.io"}, firstWords(undeclared(without, found["LA102"])))

	vpn := catalogue.Get("VPN002")
	without = vpn
	without.Reads = nil
	assert.Equal(t, []string{"exec:vpn"}, firstWords(undeclared(without, found["VPN002"])))

	with := catalogue.Get("LA105")
	with.Reads = append(slices.Clone(with.Reads), manifests.Reads("", manifests.Cluster, "nodes"))
	assert.Equal(t, []string{"nodes"}, unused(with, found["LA105"]))
}

func firstWords(s []string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		out = append(out, strings.Fields(v)[0])
	}
	return out
}

// Every field of kube.Setup is classified in setupFields: a new field is a new read.
func TestEveryFieldOfTheSetupIsClassified(t *testing.T) {
	var fields []string
	for _, path := range []string{"../pkg/kube/setup.go", "../pkg/kube/facts.go", "../pkg/kube/proxyroute/model.go"} {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !slices.Contains([]string{"Setup", "ProxyFacts", "Model"}, ts.Name.Name) {
				return true
			}
			for _, fl := range ts.Type.(*ast.StructType).Fields.List {
				for _, name := range fl.Names {
					fields = append(fields, name.Name)
				}
				if len(fl.Names) == 0 {
					fields = append(fields, strings.TrimPrefix(fmt.Sprint(fl.Type), "&{proxyroute "))
				}
			}
			return false
		})
	}
	require.Greater(t, len(fields), 40)
	for _, f := range fields {
		f = strings.TrimSuffix(f, "}")
		_, ok := setupFields[f]
		assert.True(t, ok, "kube.Setup.%s is not in setupFields: say what discovery reads to fill it", f)
	}
}
